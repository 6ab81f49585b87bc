"""What the Topology Manager saw and decided, step by step, written as the kubelet logs it at high verbosity.

`admit(pod, node, trace=[...])` appends one `HintStep` per merge (per container in container scope, one for the pod
in pod scope): every provider's hints for every resource, the merged best hint and whether the policy admits it.
With a trace, hints are generated over every NUMA mask, also under single-numa-node (where the verdict only needs
single-node masks), so the lists are the ones the kubelet logs.

Formatting follows the kubelet: a `TopologyHint` prints as `{<mask> <preferred>}` (`TopologyHint.String`), a mask as
`bitmask.BitMask.String` does (binary, padded to an even width), a missing affinity as `<nil>`; providers log
`TopologyHints` per resource (`scope.go accumulateProvidersHints`), the merge `ContainerTopologyHint` /
`PodTopologyHint` with `bestHint` (`scope_container.go` / `scope_pod.go calculateAffinity`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knuma.topology.hints import Hint

__all__ = ["HintStep", "ProviderHints", "format_hint", "format_hints", "format_mask", "log_lines"]


@dataclass(frozen=True, slots=True)
class ProviderHints:
    provider: str
    """`cpu manager`, `memory manager`, `device manager` or `dra`."""
    resource: str
    hints: tuple[Hint, ...] | None
    """None: the provider has no preference for this resource (nil hints)."""


@dataclass(frozen=True, slots=True)
class HintStep:
    container: str
    """The container merged, "" for the pod (pod scope)."""
    kind: str
    """`init`, `sidecar`, `app`, or `pod`."""
    providers: tuple[ProviderHints, ...]
    best: Hint
    admitted: bool


def format_mask(mask: int | None) -> str:
    """`bitMask.String`: binary, zero-padded to 2 digits, 2 more for each pair of bits the value goes above
    (`01`, `10`, `11`, `0101`); `<nil>` for no affinity."""
    if mask is None:
        return "<nil>"
    grouping = 2
    for shift in range(62, 0, -2):
        if mask > (1 << shift):
            grouping += 2
    return format(mask, f"0{grouping}b")


def format_hint(hint: Hint) -> str:
    """`TopologyHint.String`: `{01 true}`."""
    return f"{{{format_mask(hint.mask)} {'true' if hint.preferred else 'false'}}}"


def format_hints(hints: Sequence[Hint] | None) -> str:
    """A hint list as klog prints a slice: `[{01 true} {11 false}]`; `[]` for an empty list, `<nil>` for none."""
    if hints is None:
        return "<nil>"
    return "[" + " ".join(format_hint(h) for h in hints) + "]"


def log_lines(pod: str, steps: Sequence[HintStep]) -> list[str]:
    """The kubelet's log lines for these steps (one `TopologyHints` per provider and resource, then the merge)."""
    lines: list[str] = []
    for step in steps:
        where = f'pod="{pod}"' + (f' containerName="{step.container}"' if step.container else "")
        for provider in step.providers:
            lines.append(
                f'"TopologyHints" provider="{provider.provider}" resource="{provider.resource}" '
                f"hints={format_hints(provider.hints)} {where}"
            )
        merged = "PodTopologyHint" if step.kind == "pod" else "ContainerTopologyHint"
        lines.append(f'"{merged}" bestHint={format_hint(step.best)} admit={str(step.admitted).lower()} {where}')
    return lines
