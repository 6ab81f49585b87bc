"""Minimal kube-controller-manager controllers for the local cluster (Deployment, ReplicaSet)."""
