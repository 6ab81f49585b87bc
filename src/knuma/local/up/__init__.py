"""`knuma up`: API server, simulated NUMA nodes, exporters and the scheduler as one local cluster."""
