"""Device claims: CEL selectors, the DRA allocator (with NUMA alignment) and the k8srm prototype's pool scheduler.

Pure: plain data in (slices, classes, claims, devices in use, the node's NUMA zones and Topology Manager policy),
an allocation or a precise reason out. Part 2 wires it into the scheduler daemon and the simulator.
"""
