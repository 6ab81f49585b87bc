"""The operator: reconciles `NUMAResourcesOperator` / `NUMAResourcesScheduler` custom resources into the stack the
deployer renders.

`desired` (pure: custom resource in, manifests out, through the deployer's render functions), `conditions` (pure:
reconcile outcome in, the four base conditions out), `reconciler` (one reconcile pass: apply, read readiness, write
status) and `manager` (the asyncio loop: informers, resync, signals).
"""
