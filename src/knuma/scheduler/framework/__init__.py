"""The scheduling framework: plugin interfaces, registry, plugin sets, profiles, node snapshots."""
