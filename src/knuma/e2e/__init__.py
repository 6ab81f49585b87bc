"""`knuma e2e`: the end-to-end suite users run against their own cluster (numaresources-operator's serial suite's
job), shipped in the package as pytest tests.

An outer layer like `knuma.testing`: the product never imports it. `runner` starts pytest on `suite/` with the
cluster's kubeconfig; `cluster` holds the few API helpers the tests share (namespaces, Guaranteed pods, waits, NRT
zones); the tests use the product's own code where it applies (`knuma check`'s node checks, the deployer).
"""
