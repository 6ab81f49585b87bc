"""`knuma scheduler`: the daemon loop, its queue, metrics and health endpoints."""
