"""The simulated hardware shared by the simulator and the local cluster: node shapes, cluster specs and the
ground-truth kubelet. Around the product, never imported by it."""
