"""`admit` memoises its verdicts: the memoised answer must be exactly what the kubelet model computes, on every node
with the same zones (whatever its name), for every pod with the same containers."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.api.pod import Pod
from knuma.topology import NodeTopology, admit
from knuma.topology import kubelet as model
from knuma.topology.cpumanager import CPUManagerOptions

Gi = 1024**3
GPU = "example.com/gpu"


def random_pod(rng: random.Random, index: int) -> Pod:
    def resources(cpu: str, memory: int, gpu: int = 0, hugepages: int = 0) -> dict[str, Any]:
        amounts: dict[str, Any] = {"cpu": cpu, "memory": f"{memory}Gi"}
        if gpu:
            amounts[GPU] = str(gpu)
        if hugepages:
            amounts["hugepages-1Gi"] = f"{hugepages}Gi"
        return {"limits": amounts, "requests": amounts}

    def container(name: str, **extra: Any) -> dict[str, Any]:
        cpu = rng.choice(["1", "2", "3", "4", "6", "500m", "1500m"])
        memory = rng.randint(1, 12)
        gpu = rng.choice([0, 0, 0, 1, 2])
        hugepages = rng.choice([0, 0, 0, 2])
        spec = {"name": name, "image": "app", "resources": resources(cpu, memory, gpu, hugepages), **extra}
        if rng.random() < 0.2:  # Burstable
            spec["resources"] = {"requests": {"cpu": cpu, "memory": f"{memory}Gi"}}
        return spec

    spec: dict[str, Any] = {"containers": [container(f"app{i}") for i in range(rng.choice([1, 1, 2]))]}
    if rng.random() < 0.4:
        spec["initContainers"] = [container("init")]
        if rng.random() < 0.5:
            spec["initContainers"].append(container("proxy", restartPolicy="Always"))
    name = f"p{index}"
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def random_node(rng: random.Random, name: str) -> NodeTopology:
    zones = rng.choice([1, 2, 2, 4, 8])
    cpus = rng.choice([4, 8, 12, 16])
    per_zone: dict[str, int] = {"cpu": cpus * 1000, "memory": rng.choice([8, 16, 32]) * Gi}
    if rng.random() < 0.5:
        per_zone[GPU] = rng.choice([1, 2, 4])
    if rng.random() < 0.3:
        per_zone["hugepages-1Gi"] = 8 * Gi
    options = CPUManagerOptions()
    if rng.random() < 0.2:
        options = CPUManagerOptions(full_pcpus_only=True, cpus_per_core=2)
    elif rng.random() < 0.2:
        options = CPUManagerOptions(distribute_cpus_across_numa=True)
    return NodeTopology.build(
        name,
        dict.fromkeys(range(zones), per_zone),
        rng.choice(list(Policy)),
        rng.choice(list(Scope)),
        cpu_manager=options,
    )


def same(a: model.Admission, b: model.Admission) -> bool:
    return (
        replace(a, node=b.node) == b
        and a.node.name == b.node.name
        and a.node.zones == b.node.zones
        and dict(a.node.memory_groups) == dict(b.node.memory_groups)
        and a.node.config == b.node.config
    )


@pytest.mark.parametrize("seed", range(6))
def test_memoised_verdicts_equal_the_models_on_random_pods_and_nodes(seed: int) -> None:
    """Random pods admitted one after the other on random nodes, each question asked of the memo (empty at first,
    then warm) and of the model without it; the same pods also go to a twin node with another name."""
    rng = random.Random(seed)
    model._MEMO.clear()
    shapes = [random_pod(rng, index) for index in range(8)]
    hits = 0
    for round_ in range(12):
        node = random_node(rng, f"node-{round_}")
        twin = replace(node, name=f"twin-{round_}")
        for index in range(25):
            pod = replace(rng.choice(shapes), name=f"p{index}", uid=f"p{index}")
            expected = model._admit(pod, node, None, None)
            hits += model._MEMO.get((model._pod_id(pod), None, node.admission_id)) is not None
            assert same(admit(pod, node), expected)
            assert same(admit(pod, node), expected), "the memoised answer"
            on_twin = admit(pod, twin)
            assert same(on_twin, model._admit(pod, twin, None, None)) and on_twin.node.name == twin.name
            if expected.admitted:
                node, twin = expected.node, replace(expected.node, name=twin.name)
    assert hits, "pods of the same shape on nodes in the same state are asked again"


def test_dra_devices_are_part_of_the_question() -> None:
    node = NodeTopology.build("n", {0: {"cpu": 8000, "memory": 8 * Gi}, 1: {"cpu": 8000, "memory": 8 * Gi}})
    pod = random_pod(random.Random(1), 0)
    devices_on_1 = {c.name: {"gpu.example.com/pool/gpu-0": 1} for c in pod.all_containers}
    devices_on_0 = {c.name: {"gpu.example.com/pool/gpu-0": 0} for c in pod.all_containers}
    for devices in (devices_on_1, devices_on_0, devices_on_1):
        assert same(admit(pod, node, devices), model._admit(pod, node, devices, None))


def test_the_memo_is_bounded() -> None:
    memo = model._Memo(8)
    verdict = model._Verdict.of(admit(random_pod(random.Random(2), 0), NodeTopology.build("n", {0: {"cpu": 4000}})))
    for key in range(100):
        memo.put(key, verdict)
    assert len(memo.entries) <= 8 and memo.get(99) is verdict and memo.get(0) is None


def test_the_keys_cover_every_field_admission_reads() -> None:
    """`NodeTopology.admission_key` names the fields it covers: a new field must be added to it (or here, if
    admission does not read it)."""
    from dataclasses import fields

    from knuma.topology import NUMAZone

    assert [f.name for f in fields(NUMAZone)] == ["id", "capacity", "allocatable", "available", "distances"]
    assert [f.name for f in fields(NodeTopology)] == [
        "name",
        "zones",
        "config",
        "prefer_closest",
        "memory_groups",
        "cpu_manager",
    ]
    node = random_node(random.Random(3), "n")
    hardware = node.hardware_key
    other = node.with_available({0: {"cpu": 0}})
    assert other.hardware_key is hardware, "computed once per machine, not once per state"
    assert other.admission_key != node.admission_key
    assert other.with_available({0: node.zones[0].available}).admission_key == node.admission_key


def test_interned_ids_are_never_reused() -> None:
    from knuma.topology.node import Interned

    ids = Interned(2)
    a, b = ids(("a",)), ids(("b",))
    assert ids(("a",)) == a != b
    c = ids(("c",))  # the table was full: it starts afresh
    assert c not in (a, b) and ids(("a",)) not in (a, b, c)
