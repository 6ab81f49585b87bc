"""`knuma exporter`: the node agent that publishes per-NUMA resources as a NodeResourceTopology object.

The core (`sysfs`, `builder`, `fingerprint`, `tmconfig`) is pure or file-reading only; `podresources`, `publisher`,
`triggers` and `daemon` add the I/O around it.
"""
