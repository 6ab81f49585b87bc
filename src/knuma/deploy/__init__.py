"""The deployer: the whole stack (NRT CRD, topology updater, scheduler) as Kubernetes objects, and putting them on a
cluster.

Rendering is pure: `options.DeployOptions` in, plain manifest dicts out, one module per component (`api`,
`scheduler`, `upstream_scheduler`, `exporter`, `rte`, `nfd`, `openshift`), assembled by `render`. `validate` holds the
pure cluster checks. `cluster` is the imperative shell that applies, removes and waits through `knuma.kube`.
"""
