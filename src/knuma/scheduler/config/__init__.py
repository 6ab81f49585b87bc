"""The scheduler's configuration: a `KubeSchedulerConfiguration` read as kube-scheduler reads it."""
