"""Exporter benchmarks: build time for a 256-CPU, 8-NUMA machine with 500 pods, and a whole daemon's cost.

    python -m knuma.bench.exporter            # markdown table on stdout

- `bench_build`: the pure builder (fingerprint included) on in-memory data; target < 10 ms per build.
- `bench_scan_build_publish`: one update as the daemon does it: PodResources `GetAllocatableResources` + `List` over
  a real unix socket (500 pods), build, merge-patch to an in-process `knuma apiserver`.
- `bench_daemon_rss`: resident memory of a `knuma exporter` process (the console script, as a DaemonSet runs it)
  after it published; target < 60 MB.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knuma.bench.memory import memory_status
from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.sysfs import MachineTopology, NUMANode, format_cpulist
from knuma.podresources.model import Allocatable, Container, Devices, Memory, Pod

__all__ = [
    "DaemonMemory",
    "Timing",
    "bench_build",
    "bench_daemon_rss",
    "bench_scan_build_publish",
    "knuma_command",
    "synthetic_kubelet",
    "synthetic_machine",
]

GiB = 1024**3


@dataclass(frozen=True, slots=True)
class Timing:
    name: str
    runs: int
    median_ms: float
    p95_ms: float
    min_ms: float

    @classmethod
    def of(cls, name: str, samples: list[float]) -> Timing:
        ordered = sorted(samples)
        p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
        return cls(name, len(samples), statistics.median(ordered) * 1000, p95 * 1000, ordered[0] * 1000)


def synthetic_machine(numa_nodes: int = 8, cpus: int = 256) -> MachineTopology:
    per_node = cpus // numa_nodes
    nodes = tuple(
        NUMANode(
            id=n,
            cpus=frozenset(range(n * per_node, (n + 1) * per_node)),
            memory_bytes=64 * GiB,
            hugepages={2 * 1024**2: 1024, GiB: 4},
            distances={m: 10 if m == n else 20 + 2 * abs(m - n) for m in range(numa_nodes)},
        )
        for n in range(numa_nodes)
    )
    return MachineTopology(nodes=nodes)


def synthetic_kubelet(machine: MachineTopology, pods: int = 500, seed: int = 7) -> KubeletState:
    """Static CPU and memory managers, 2 CPUs reserved per NUMA node, 4 NICs per node; 2 in 5 pods are
    Guaranteed with 2 exclusive CPUs, 1 GiB of pinned memory and sometimes a NIC, while their NUMA node has free
    CPUs (about 120 pods fill the machine); the rest are Burstable."""
    rng = random.Random(seed)
    free = {n.id: sorted(n.cpus)[2:] for n in machine.nodes}
    allocatable = Allocatable(
        cpu_ids=tuple(c for ids in free.values() for c in ids),
        memory=tuple(
            block
            for n in machine.nodes
            for block in (Memory("memory", 60 * GiB, (n.id,)), Memory("hugepages-2Mi", 2 * GiB, (n.id,)))
        ),
        devices=tuple(
            Devices("example.com/nic", tuple(f"nic-{n.id}-{i}" for i in range(4)), (n.id,)) for n in machine.nodes
        ),
    )
    nics = {n.id: [f"nic-{n.id}-{i}" for i in range(4)] for n in machine.nodes}
    listed = []
    for i in range(pods):
        numa = rng.choice(machine.numa_ids)
        if i % 5 < 2 and len(free[numa]) >= 2:
            cpus = tuple(free[numa].pop() for _ in range(2))
            devices: tuple[Devices, ...] = ()
            if nics[numa] and rng.random() < 0.1:
                devices = (Devices("example.com/nic", (nics[numa].pop(),), (numa,)),)
            container = Container("app", cpus, devices, (Memory("memory", GiB, (numa,)),))
            listed.append(Pod(f"ns-{i % 20}", f"pod-{i}", (container, Container("sidecar"))))
        else:
            listed.append(Pod(f"ns-{i % 20}", f"pod-{i}", (Container("app"),)))
    return KubeletState(allocatable, listed)


def _time(fn: Callable[[], Any], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def bench_build(runs: int = 200, pods: int = 500) -> Timing:
    machine = synthetic_machine()
    state = synthetic_kubelet(machine, pods)
    options = BuildOptions("bench-node")
    build(machine, state, options)  # warm-up
    return Timing.of(f"build (256 CPUs, 8 NUMA, {pods} pods)", _time(lambda: build(machine, state, options), runs))


def bench_scan_build_publish(runs: int = 50, pods: int = 500) -> list[Timing]:
    """Scan over gRPC, build, and publish to an in-process API server (each changed: every run writes)."""
    from lightkube import AsyncClient, Client, KubeConfig
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    from knuma.exporter.publisher import Outcome, Publisher
    from knuma.exporter.scan import scan
    from knuma.podresources.client import PodResourcesClient
    from knuma.podresources.server import PodResourcesServer
    from knuma.testing.apiserver import apiserver_in_thread

    machine = synthetic_machine()
    state = synthetic_kubelet(machine, pods)
    # pods with exclusive CPUs last: dropping pods from the end changes the object every round
    state = KubeletState(state.allocatable, sorted(state.pods, key=lambda p: bool(p.containers[0].cpu_ids)))
    options = BuildOptions("bench-node")
    with (
        apiserver_in_thread() as api,
        PodResourcesServer(allocatable=state.allocatable, pods=state.pods) as kubelet,
        PodResourcesClient(kubelet.address) as podresources,
    ):
        sync = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        crd: Any = CustomResourceDefinition.from_dict(_crd())
        sync.create(crd)
        sync.close()
        scans = _time(lambda: scan(podresources), runs)

        async def publish_all() -> tuple[list[float], list[float]]:
            client = AsyncClient(KubeConfig.from_file(api.kubeconfig), trust_env=False)
            publisher = Publisher(client, "bench-node", add_owner_reference=False, resync_every=0)
            changed: list[float] = []
            unchanged: list[float] = []
            for i in range(runs + 1):
                # drop one pinned pod per round so that every publish has something to write
                current = KubeletState(state.allocatable, state.pods[: len(state.pods) - i])
                nrt = build(machine, current, options).nrt
                started = time.perf_counter()
                outcome = await publisher.publish(nrt)
                if i:
                    assert outcome is Outcome.UPDATED, outcome
                    changed.append(time.perf_counter() - started)
                started = time.perf_counter()
                outcome = await publisher.publish(nrt)
                assert outcome is Outcome.UNCHANGED, outcome
                unchanged.append(time.perf_counter() - started)
            await client.close()
            return changed, unchanged

        changed, unchanged = asyncio.run(publish_all())
        end_to_end = []
        for i in range(runs):
            started = time.perf_counter()
            kubelet.set_pods(state.pods[: len(state.pods) - i])
            nrt = build(machine, scan(podresources), options).nrt
            end_to_end.append(time.perf_counter() - started)
            del nrt
    return [
        Timing.of(f"PodResources scan over gRPC ({pods} pods)", scans),
        Timing.of("publish, object changed (merge patch)", changed),
        Timing.of("publish, nothing changed (no write)", unchanged),
        Timing.of("scan + build", end_to_end),
    ]


@dataclass(frozen=True, slots=True)
class DaemonMemory:
    command: str
    rss: int
    """VmRSS (bytes) after the first publish and a few periodic updates."""
    peak: int
    """VmHWM (bytes): the most the process ever had resident."""


def knuma_command() -> list[str]:
    """The `knuma` console script of this environment (what a DaemonSet runs), with `exporter`."""
    script = Path(sys.executable).with_name("knuma")
    if not script.exists():
        raise RuntimeError(f"no knuma console script next to {sys.executable}: install the package (make dev)")
    return [str(script), "exporter"]


def bench_daemon_rss(
    pods: int = 500, settle: float = 3.0, command: list[str] | None = None, *, exclude_terminal_pods: bool = False
) -> DaemonMemory:
    """Resident memory of a `knuma exporter` daemon, started through the `knuma` console script, after it published
    a 500-pod node (real gRPC PodResources server, in-process `knuma apiserver` over HTTPS, /metrics served) and ran
    a few periodic updates. With `exclude_terminal_pods`, the 500 pods also exist in the API server (one in five
    Succeeded) and the daemon keeps its node-scoped pod informer."""
    import socket

    from lightkube import Client, KubeConfig
    from lightkube.models.core_v1 import Container as ContainerSpec
    from lightkube.models.core_v1 import PodSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
    from lightkube.resources.core_v1 import Namespace
    from lightkube.resources.core_v1 import Pod as PodObject

    from knuma.exporter.publisher import NRT
    from knuma.podresources.server import PodResourcesServer
    from knuma.testing.apiserver import apiserver_in_thread

    command = command or knuma_command()
    machine = synthetic_machine()
    state = synthetic_kubelet(machine, pods)
    with (
        tempfile.TemporaryDirectory(prefix="knuma-bench-") as tmp,
        apiserver_in_thread() as api,
        PodResourcesServer(allocatable=state.allocatable, pods=state.pods) as kubelet,
    ):
        sysfs = _write_sysfs(Path(tmp) / "sys", machine)
        client = Client(KubeConfig.from_file(api.kubeconfig), trust_env=False)
        crd: Any = CustomResourceDefinition.from_dict(_crd())
        client.create(crd)
        flags = ["--exclude-terminal-pods"] if exclude_terminal_pods else []
        if exclude_terminal_pods:
            for namespace in sorted({pod.namespace for pod in state.pods}):
                client.create(Namespace(metadata=ObjectMeta(name=namespace)))
            for i, pod in enumerate(state.pods):
                spec = PodSpec(nodeName="bench-node", containers=[ContainerSpec(name="app", image="app")])
                client.create(PodObject(metadata=ObjectMeta(name=pod.name, namespace=pod.namespace), spec=spec))
                phase = "Succeeded" if i % 5 == 4 else "Running"
                client.patch(PodObject.Status, pod.name, {"status": {"phase": phase}}, namespace=pod.namespace)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        args = [
            *command,
            *flags,
            "--node-name=bench-node",
            f"--sysfs-root={sysfs}",
            f"--podresources-socket={kubelet.address}",
            f"--kubeconfig={api.kubeconfig}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={port}",
            "--sleep-interval=1s",
        ]
        proc = subprocess.Popen(args, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get(NRT, "bench-node")
                    break
                except Exception:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError("the exporter did not publish within 30 s") from None
                    time.sleep(0.05)
            time.sleep(settle)  # a few periodic updates
            status = memory_status(proc.pid)
            return DaemonMemory(" ".join(["knuma", *command[1:], *flags]), status["VmRSS"], status["VmHWM"])
        finally:
            proc.terminate()
            proc.wait(10)
            client.close()


def _write_sysfs(root: Path, machine: MachineTopology) -> Path:
    ids = machine.numa_ids
    for node in machine.nodes:
        d = root / "devices" / "system" / "node" / f"node{node.id}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(format_cpulist(node.cpus) + "\n")
        (d / "meminfo").write_text(f"Node {node.id} MemTotal: {(node.memory_bytes or 0) // 1024} kB\n")
        (d / "distance").write_text(" ".join(str(node.distances[i]) for i in ids) + "\n")
        for size, count in node.hugepages.items():
            h = d / "hugepages" / f"hugepages-{size // 1024}kB"
            h.mkdir(parents=True)
            (h / "nr_hugepages").write_text(f"{count}\n")
    return root


def _crd() -> dict[str, Any]:
    """A schema-less NodeResourceTopology CRD: nothing pruned, so the benchmark measures the exporter only."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "noderesourcetopologies.topology.node.k8s.io",
            # a protected group (*.k8s.io): the API server wants upstream's approval annotation, as the real CRD has
            "annotations": {"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1870"},
        },
        "spec": {
            "group": "topology.node.k8s.io",
            "names": {"kind": "NodeResourceTopology", "plural": "noderesourcetopologies"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1alpha2",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }


def main() -> None:
    timings = [bench_build(), *bench_scan_build_publish()]
    print("| exporter benchmark | runs | median ms | p95 ms | min ms |")
    print("|---|---:|---:|---:|---:|")
    for t in timings:
        print(f"| {t.name} | {t.runs} | {t.median_ms:.2f} | {t.p95_ms:.2f} | {t.min_ms:.2f} |")
    for memory in (bench_daemon_rss(), bench_daemon_rss(exclude_terminal_pods=True)):
        print(
            f"\n`{memory.command}` daemon after publishing a 500-pod node: RSS {memory.rss / 1024**2:.1f} MiB "
            f"({memory.rss / 1e6:.1f} MB), peak {memory.peak / 1024**2:.1f} MiB"
        )
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
