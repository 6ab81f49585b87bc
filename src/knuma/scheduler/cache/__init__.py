"""The scheduler's NRT cache: nodes, their NRT data, pods, and reservations until the NRT catches up."""
