"""Simulated NUMA nodes: kubelets with the Topology Manager model, PodResources, sysfs, NRT (see `fleet`)."""
