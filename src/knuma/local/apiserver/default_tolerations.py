"""The `DefaultTolerationSeconds` admission plugin (on by default in kube-apiserver,
`plugin/pkg/admission/defaulttolerationseconds/admission.go`): every pod that does not already tolerate them gets
`node.kubernetes.io/not-ready:NoExecute` and `node.kubernetes.io/unreachable:NoExecute` (operator `Exists`) for
300 s, so a pod stays on a node that stops answering for five minutes before it is evicted. `kubectl get pod -o
yaml` and `kubectl describe pod` then show the two tolerations a cluster shows.

A toleration with an empty key counts for both taints, one with an empty effect for any effect, as upstream's
checks do. Applied on create and update of pods (not their subresources).
"""

from __future__ import annotations

from typing import Any

from knuma.api.types import JsonObj

__all__ = ["DEFAULT_TOLERATION_SECONDS", "add_default_tolerations"]

DEFAULT_TOLERATION_SECONDS = 300
"""`--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`."""
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


def _tolerates(tolerations: list[Any], key: str) -> bool:
    return any(
        isinstance(t, dict) and t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
        for t in tolerations
    )


def add_default_tolerations(pod: JsonObj) -> None:
    """`Plugin.Admit`: append the not-ready and unreachable tolerations the pod lacks, in place."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return  # validation reports it
    added = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
        for key in (NOT_READY, UNREACHABLE)
        if not _tolerates(tolerations, key)
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]
