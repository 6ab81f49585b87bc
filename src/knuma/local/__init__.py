"""The local cluster: an API server, simulated NUMA nodes, controllers and `knuma up`. Around the product,
never imported by it."""
