"""Scheduler plugins; each module is one plugin, registered by name in `knuma.scheduler.framework.profiles`."""
