"""Hint traces: every provider's hints and each merge, formatted as the kubelet logs them."""

from __future__ import annotations

from knuma.api.nrt import Policy, Scope
from knuma.topology import admit
from knuma.topology.hints import Hint
from knuma.topology.trace import HintStep, format_hint, format_hints, format_mask, log_lines
from tests.topology.test_kubelet import Gi, _issue_node, cpus, gu, make_pod, node


def test_masks_print_as_bitmask_string():
    """`bitMask.String`: two digits, two more for each pair of bits the value goes above (strictly)."""
    assert [format_mask(m) for m in (1, 2, 3, 4, 5, 15, 16, 17)] == [
        "01",
        "10",
        "11",
        "100",
        "0101",
        "1111",
        "10000",
        "010001",
    ]
    assert format_mask(None) == "<nil>"
    assert format_hint(Hint(3, False)) == "{11 false}"
    assert format_hints([Hint(1, True), Hint(3, False)]) == "[{01 true} {11 false}]"
    assert (format_hints([]), format_hints(None)) == ("[]", "<nil>")


def test_the_issue_example_shows_why_the_second_app_container_is_rejected():
    steps: list[HintStep] = []
    pod = make_pod(gu("a", "20", "1Gi"), gu("b", "20", "1Gi"), init=(gu("init", "30", "1Gi"),))
    result = admit(pod, _issue_node(), trace=steps)
    assert not result.admitted
    assert [(s.container, s.kind, s.admitted) for s in steps] == [
        ("init", "init", True),
        ("a", "app", True),
        ("b", "app", False),
    ]
    cpu = {s.container: next(p for p in s.providers if p.resource == "cpu") for s in steps}
    assert format_hints(cpu["init"].hints) == "[{01 true} {10 true} {11 false}]"
    assert format_hints(cpu["a"].hints) == "[{01 true} {11 false}]"  # reusable CPUs on 0 rule {10} out
    assert format_hints(cpu["b"].hints) == "[{11 false}]"  # 10 reusable left on 0: {01} too small, {10} ruled out
    assert format_hint(steps[-1].best) == "{<nil> false}"
    lines = log_lines("default/p", steps)
    assert lines[-3:] == [
        '"TopologyHints" provider="cpu manager" resource="cpu" hints=[{11 false}] pod="default/p" containerName="b"',
        # {11} is gone: NUMA 0 already holds single-node memory blocks (calculateHints' group rule)
        '"TopologyHints" provider="memory manager" resource="memory" hints=[{01 true} {10 true}] '
        'pod="default/p" containerName="b"',
        '"ContainerTopologyHint" bestHint={<nil> false} admit=false pod="default/p" containerName="b"',
    ]


def test_a_trace_never_changes_the_verdict_and_pod_scope_merges_once():
    zones = {0: {"cpu": cpus(4), "memory": 4 * Gi}, 1: {"cpu": cpus(4), "memory": 4 * Gi}}
    pod = make_pod(gu("a", "2", "1Gi"), gu("b", "3", "1Gi"))
    for scope in (Scope.CONTAINER, Scope.POD):
        for policy in (Policy.SINGLE_NUMA_NODE, Policy.RESTRICTED, Policy.BEST_EFFORT):
            n = node(zones, policy, scope)
            steps: list[HintStep] = []
            traced, plain = admit(pod, n, trace=steps), admit(pod, n)
            assert (traced.admitted, traced.reason, traced.placements) == (
                plain.admitted,
                plain.reason,
                plain.placements,
            )
            assert len(steps) == (1 if scope is Scope.POD else 2)
    steps = []
    admit(pod, node(zones, Policy.SINGLE_NUMA_NODE, Scope.POD), trace=steps)
    (step,) = steps
    assert (step.container, step.kind) == ("", "pod")
    assert format_hints(next(p for p in step.providers if p.resource == "cpu").hints) == "[{11 true}]"
