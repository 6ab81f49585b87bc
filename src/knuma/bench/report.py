"""`make bench`: run the benchmarks and write docs/benchmarks.md (machine, command, figures)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from knuma.bench import core, throughput


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def python_speed() -> float:
    """Seconds this machine takes, right now, for ten million additions in a pure-Python loop (best of three).

    The load average misses a slow or throttled host: the same code on the same machine, at the same load, ran every
    benchmark about three times slower on 2026-11-30 than on 2026-11-29, and this loop with them. Stated beside a
    report, it tells a slow run from a regression: figures of two runs compare once scaled by it."""
    best = float("inf")
    for _ in range(3):  # two million at a time, scaled: a second at most on a slow machine
        started = time.perf_counter()
        total = 0
        for number in range(2_000_000):
            total += number
        best = min(best, time.perf_counter() - started)
    return best * 5


def _conditions() -> str:
    """The load average and the Python speed at the start of a run."""
    return f"load average at start {os.getloadavg()[0]:.2f}, Python speed {python_speed():.2f} s (`python_speed`)"


def core_section() -> str:
    lines = [
        "## Scheduling core: Filter + Score per node",
        "",
        "One Guaranteed pod (4 CPUs, 8 GiB) against 500 nodes with the memory manager on, single-numa-node, container",
        "scope; the default profile (NodeResourcesFit + NodeResourceTopologyMatch with KnumaBinPacking), no sampling.",
        "Median of 5 rounds.",
        "",
        "| NUMA zones per node | nodes | feasible | µs per node (filter + score) |",
        "|---:|---:|---:|---:|",
    ]
    for result in core.run():
        lines.append(f"| {result.zones} | {result.nodes} | {result.feasible} | {result.microseconds_per_node:.1f} |")
    return "\n".join(lines)


def wide_section() -> str:
    lines = [
        "## Wide machines: up to 16 NUMA zones under restricted",
        "",
        "A Guaranteed pod (2 GiB) against 10 nodes of 8, 12 and 16 NUMA zones (8 CPUs and 16 GiB each, partly used",
        "at random; `max-allowable-numa-nodes` raised), restricted policy, container scope: the CPU and memory hints",
        "cover every NUMA mask (65,535 at 16 zones) and are merged. A 4-CPU pod fits one zone on most nodes; a 20-CPU",
        "pod has no mask every provider prefers (CPUs want 3 zones, memory 1), so the merge walks the non-preferred",
        "masks, on the subset lattice from 10 zones (before that change one such pod took 8 min 20 s on one 16-zone",
        "node). New nodes every round (no admission answered from a cache); median of 3 rounds.",
        "",
        "| NUMA zones per node | nodes | pod CPUs | feasible | ms per node (filter + score) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for result in core.run_wide():
        lines.append(
            f"| {result.zones} | {result.nodes} | {result.cpus} | {result.feasible} | "
            f"{result.milliseconds_per_node:.1f} |"
        )
    return "\n".join(lines)


def throughput_section() -> str:
    result = throughput.run(
        nodes=5000, pods=10000, zones=(2, 4, 8), reference_pods=20, uncached_pods=2000, new_shape_pods=2000
    )
    k, ref, u, w = result.knuma, result.reference, result.uncached, result.new_shapes
    rows = [
        f"| knuma (vectorised, per-shape cache) | {k.pods} | {k.scheduled} | {k.average:.1f} | {k.p50} | {k.p90} | "
        f"{k.p99} | {k.latency_ms['p50']} / {k.latency_ms['p99']} |"
    ]
    if u is not None:
        rows.append(
            f"| vectorised, no cache (before) | {u.pods} | {u.scheduled} | {u.average:.1f} | {u.p50} | {u.p90} | "
            f"{u.p99} | {u.latency_ms['p50']} / {u.latency_ms['p99']} |"
        )
    if w is not None:
        rows.append(
            f"| knuma, every pod a new shape (worst case) | {w.pods} | {w.scheduled} | {w.average:.1f} | {w.p50} | "
            f"{w.p90} | {w.p99} | {w.latency_ms['p50']} / {w.latency_ms['p99']} |"
        )
    rows.append(
        f"| reference | {ref.pods} | {ref.scheduled} | {ref.average:.2f} | | | | "
        f"{ref.latency_ms['p50']} / {ref.latency_ms['p99']} |"
    )
    return "\n".join(
        [
            "## `knuma bench`: scheduling throughput at 5000 nodes",
            "",
            "`knuma bench --nodes 5000 --pods 10000 --zones 2,4,8`: single-numa-node workers with 2, 4 or 8 NUMA zones",
            "(16 CPUs, 32 GiB each), mostly Guaranteed pods of 1 to 8 CPUs, one at a time, filter + score + reserve on",
            "every node (no sampling), the default profile (NodeResourcesFit and NodeResourceTopologyMatch, both",
            "scoring), with the heap frozen for the cycle collector once the cluster is built, as the daemon freezes",
            "it once its caches are synced. Baselines in the same run, on the first pods of the same sequence: the",
            "vectorised path with its",
            "per-shape cache off (every node evaluated for every pod: what it did before the cache), and the",
            "straightforward per-node reference. The core's worst case on a fresh cluster of the same nodes: 2000",
            "pods of the same mix, every one a shape no earlier pod had (each container's memory differs by the pod's",
            "index in KiB), so no per-shape result is ever reused; target for it (issue 20): at least",
            f"{throughput.NEW_SHAPE_TARGET} pods/s. Throughput percentiles are over 1-second windows (scheduler_perf",
            "style: p90 = the rate exceeded 90% of the time). One process, one core.",
            "",
            "| scheduler | pods | scheduled | avg pods/s | p50 | p90 | p99 | latency p50 / p99 (ms) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Speed-up over the reference: **{result.speedup:.0f}x**"
            + (f"; over the uncached vectorised path: **{k.average / u.average:.1f}x**." if u and u.average else ".")
            + (
                f" Every pod a new shape: **{w.average:.0f} pods/s** (target {throughput.NEW_SHAPE_TARGET}: "
                f"{'met' if w.average >= throughput.NEW_SHAPE_TARGET else 'not met'}); "
                f"{w.pods / w.cpu_seconds if w.cpu_seconds else 0:.0f} pods per CPU-second of the benchmark process "
                "(what one free core gives when other work shares the machine)."
                if w is not None
                else ""
            ),
        ]
    )


def exporter_section() -> str:
    from knuma.bench import exporter as exporter_bench

    lines = [
        "## Exporter: build and publish one NRT (256 CPUs, 8 NUMA nodes, 500 pods)",
        "",
        "Build = the pure NRT builder with the fingerprint; scan = PodResources `GetAllocatableResources` + `List`",
        "over a real unix socket; publish = merge patch to an in-process `knuma apiserver`. Targets: build < 10 ms,",
        "daemon RSS < 60 MB.",
        "",
        "| exporter benchmark | runs | median ms | p95 ms | min ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for t in [exporter_bench.bench_build(), *exporter_bench.bench_scan_build_publish()]:
        lines.append(f"| {t.name} | {t.runs} | {t.median_ms:.2f} | {t.p95_ms:.2f} | {t.min_ms:.2f} |")
    lines += [
        "",
        "Exporter daemon resident memory, started through the `knuma` console script as a DaemonSet runs it, after",
        "publishing a 500-pod node and a few periodic updates (/metrics served; target < 60 MB):",
        "",
        "| command | RSS MiB | RSS MB | peak MiB |",
        "|---|---:|---:|---:|",
    ]
    for memory in (
        exporter_bench.bench_daemon_rss(),
        exporter_bench.bench_daemon_rss(exclude_terminal_pods=True),
    ):
        lines.append(
            f"| `{memory.command}` | {memory.rss / 2**20:.1f} | {memory.rss / 1e6:.1f} | {memory.peak / 2**20:.1f} |"
        )
    return "\n".join(lines)


def apiserver_section() -> str:
    from knuma.bench import apiserver as apiserver_bench

    lines = [
        "## `knuma apiserver`: writes and watch delivery on loopback",
        "",
        "2000 ConfigMaps created then updated over HTTP by 8 concurrent clients while 4 watchers stream the events;",
        "server and clients in a Python process of their own. Target: at least 1000 object writes/s in memory.",
        "",
        "| mode | creates/s | updates/s | watch events/s delivered |",
        "|---|---:|---:|---:|",
    ]
    for r in apiserver_bench.run_in_fresh_process():
        lines.append(f"| {r.mode} | {r.creates_per_s:.0f} | {r.updates_per_s:.0f} | {r.watch_events_per_s:.0f} |")
    return "\n".join(lines)


def nodes_section() -> str:
    from knuma.bench import nodes as nodes_bench

    lines = [
        "## Simulated nodes: how many one process sustains (`knuma up`)",
        "",
        "One process runs N two-socket simulated nodes (`knuma.local.nodes.Fleet`, NRT published in-process) against a",
        "`knuma apiserver` process: registration (Node, Lease, first NRT), then 30 s of heartbeats (each Lease renewed",
        "every 10 s, as the kubelet does), then 1000 Guaranteed pods created already bound, round-robin, until every",
        "one is admitted and its status written. Sustained = no Lease left unrenewed for more than 15 s (the lease",
        "lasts 40 s) and at least 95% of the renewals due in the window done. Target: 1000 nodes.",
        "",
        "| nodes | register s | renewals done / due | worst renewal gap s | stalest lease s | worst loop lag ms "
        "| CPU (cores) | RSS MiB | pods admitted/s | sustained |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in nodes_bench.run():
        lines.append(
            f"| {r.nodes} | {r.register_seconds:.1f} | {r.renewals} / {r.renewals_due} | {r.worst_gap:.1f} | "
            f"{r.stalest:.1f} | {r.worst_loop_lag * 1000:.0f} | {r.cpu_fraction:.2f} | {r.rss_mib:.0f} | "
            f"{r.admissions_per_second:.0f} | {'yes' if r.sustained else 'no'} |"
        )
    return "\n".join(lines)


def scheduler_section() -> str:
    from knuma.bench import scheduler as scheduler_bench

    target = scheduler_bench.TARGET_PODS_PER_SECOND
    results = [scheduler_bench.run(nodes=1000, pods=2000), scheduler_bench.run(nodes=5000, pods=10000)]
    at_scale = results[-1]
    verdict = "met" if at_scale.pods_per_second >= target else "not met"
    rows = [
        f"| {r.nodes} | {r.pods} | {r.scheduled} | {r.seconds:.2f} | {r.pods_per_second:.0f} "
        f"| {r.attempt_p50_ms:g} / {r.attempt_p99_ms:g} "
        f"| {r.scheduler_cpu_seconds:.1f} / {r.apiserver_cpu_seconds:.1f} | {r.wall_seconds:.0f} |"
        for r in results
    ]
    return "\n".join(
        [
            "## `knuma scheduler`: end to end through `knuma apiserver`",
            "",
            "`python -m knuma.bench.scheduler --nodes 5000 --pods 10000` (and `--nodes 1000 --pods 2000`): the API",
            "server as its own process on the same machine (HTTPS, bearer token), single-numa-node nodes (2 NUMA",
            "zones, 16 CPUs each) with their NRT objects, pending Guaranteed pods (1 to 4 CPUs); the daemon (default",
            "configuration: kube-scheduler's default plugins plus NodeResourceTopologyMatch with KnumaBinPacking, no",
            "node sampling) lists, watches, schedules, reserves and binds them (bindings and events in the background",
            "over its keep-alive `ApiSession`, as kube-scheduler binds in a goroutine per pod), and its informer sees",
            "every binding come back. Throughput from caches synced to the last binding; attempt latency is the",
            "scheduling cycle's (the `scheduler_scheduling_attempt_duration_seconds` histogram, bucket bounds); the",
            "CPU seconds are each process's over the same interval (with 2 cores, the one near the seconds column",
            "is the bottleneck); the last column is the whole row (API server start, creating the objects,",
            "scheduling).",
            "",
            f"Target (issue 20): at least {target} pods/s at 5000 nodes, the API server on the same machine:",
            f"**{at_scale.pods_per_second:.0f} pods/s, {verdict}** here, where the scheduler, the API server and",
            "everything else running share the cores.",
            "",
            "| nodes | pods | bound | seconds | pods/s | attempt p50 / p99 (ms, histogram bucket) "
            "| CPU s scheduler / API server | row s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


def preemption_section() -> str:
    from knuma.bench import preemption as preemption_bench

    results = preemption_bench.run(nodes=5000, pods_per_node=4, attempts=10)
    rows = [
        f"| {r.case} | {r.victims} | {r.first_decide_ms:.0f} | {r.decide_ms:.1f} | {r.post_filter_ms:.0f} "
        f"| {r.attempts_per_second:.1f} |"
        for r in results
    ]
    return "\n".join(
        [
            "## Preemption: one attempt of a pod no node fits",
            "",
            "`python -m knuma.bench.preemption --nodes 5000 --pods-per-node 4 --attempts 10`: the daemon's cluster",
            "cache (knuma's NRT cache), default profile and fast path, 5000 nodes of two 16-CPU NUMA zones, 20,000",
            "running pods of priority 0 (7 CPUs each, two per zone). Each pod comes 10 times with nothing changed in",
            "between, as the pods of a ReplicaSet do: the first decision is the fast path's exact pass (every plugin",
            "on every node, for the per-node verdicts when nothing fits), the next ones what it remembers (median);",
            "then DefaultPreemption's PostFilter (the dry run on the cache's nodes without the victims, NUMA zones",
            "included; median). Upstream, for scale: scheduler_perf's `PreemptionAsync/5000Nodes` threshold is 570",
            "pods/s (20,000 running pods, dry runs in parallel), and an unschedulable pod costs about 20 ms with",
            "20,000 pods (kubernetes PR #128466).",
            "",
            "| pod | victims | first decision (ms) | next decisions (ms) | PostFilter (ms) | attempts/s (next) |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )


def devices_section() -> str:
    from knuma.bench import devices as devices_bench

    lines = [
        "## Device claims: allocation per pod at 1000 DGX-like nodes",
        "",
        "`python -m knuma.bench.devices`: 1000 nodes with 8 GPUs and 8 NICs each (one GPU and one NIC per PCIe root,",
        "2 sockets x 2 NUMA nodes); a claim of k GPUs, each with a NIC on its PCIe root (`matchAttribute:",
        "resource.kubernetes.io/pcieRoot` per pair). Feasible: 0-2 GPUs and 0-2 NICs in use per node. Infeasible:",
        "one NIC in use per node, so 8 pairs fit nowhere. Time per pod = the allocator on every node (Filter), CEL",
        "verdicts cached as in a running scheduler; knuma without and with NUMA alignment (single-numa-node), and",
        "the first-fit depth-first reference (upstream's algorithm) in the same run, on the first 50 nodes, scaled to",
        "1000. Each figure is the fastest of 3 rounds (1 for the reference at 8 pairs).",
        "",
        "| case | GPUs | allocator | nodes run | nodes that fit | ms per pod (1000 nodes) | µs per node |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in devices_bench.run():
        timeouts = f" ({r.timeouts} hit the step limit)" if r.timeouts else ""
        lines.append(
            f"| {r.case} | {r.gpus} | {r.allocator} | {r.nodes} | {r.fit}{timeouts} | {r.ms_per_pod:.0f} | "
            f"{r.us_per_node:.0f} |"
        )
    return "\n".join(lines)


def dra_section() -> str:
    from knuma.bench import dra as dra_bench

    rows = dra_bench.run()
    lines = [
        "## Device claims: scheduling throughput at 1000 DGX-like nodes",
        "",
        "`python -m knuma.bench.dra`: 1000 `dgx` nodes (2 NUMA nodes of 55 CPUs, 8 GPUs and 8 NICs) with their NRT and",
        "ResourceSlices; each pod runs the daemon's cycle in process on its objects (zone devices re-read, decision",
        "on the fast path, where for pods with claims DynamicResources runs node by node on the nodes the vectorised",
        "plugins leave feasible, Reserve holding the allocation in flight, the cache's assume); the claim is then",
        "written back as its informer would deliver it. Binding is not included (see the end-to-end scheduler",
        "section). Pods with claims: 1 GPU + 1 NIC on one PCIe root with 8 CPUs, or 2 GPUs + 1 NIC with 16 CPUs, on",
        "an empty cluster and on one where claims allocated beforehand hold half the GPUs (4000 claims, as",
        "scheduler_perf's `SteadyStateClusterResourceClaimTemplate/half_*`); the same kind of pods without claims on a",
        "fresh cluster, for scale. Latency is per pod (the cycle), p50 / p99; the p99 is the run's first pod. The",
        "heap is frozen for the cycle collector while pods are timed, as the daemon freezes it once its caches are",
        "synced.",
        "",
        "| pods | nodes | scheduled | seconds | pods/s | per pod p50 / p99 (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.pods_kind} | {r.nodes} | {r.scheduled} / {r.pods} | {r.seconds:.2f} | {r.pods_per_second:.1f} | "
            f"{r.p50_ms:.1f} / {r.p99_ms:.1f} |"
        )
    return "\n".join(lines)


def simulate_section() -> str:
    from knuma.bench import simulate as simulate_bench

    measured = simulate_bench.run()
    lines = [
        "## `knuma simulate` at 5000 nodes and 50,000 pod arrivals",
        "",
        "`python -m knuma.bench.simulate`: the `default` scenario scaled to 5000 nodes (2500 two-socket, 1666",
        "four-NUMA, 834 eight-NUMA) and 50,000 pods of its templates arriving at 100/s, NRT every 60 s; each compared",
        "scheduler simulated and measured as `knuma simulate` does (the CP-SAT optimum left out), the schedulers in",
        f"{measured.jobs} worker process(es) at once on the {measured.cpus} CPU(s) this process may use",
        "(`knuma simulate --jobs`). Target: under 2 minutes of wall time for all of them together. Per scheduler: the",
        "wall and CPU seconds of its simulation in its worker process (wall seconds also count the time other work on",
        "the machine, the other workers included, took).",
        "",
        "| scheduler | seconds | CPU seconds | placed | TopologyAffinityError | pending | scheduler pods/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in measured.results:
        lines.append(
            f"| {r.scheduler} | {r.seconds:.1f} | {r.cpu_seconds:.1f} | {r.placed} | {r.topology_affinity_errors} | "
            f"{r.pending} | {r.pods_per_second:.0f} |"
        )
    lines.append(
        f"| **all ({measured.jobs} at once, wall)** | **{measured.seconds:.1f}** | **{measured.cpu_seconds:.1f}** "
        "| | | | |"
    )
    return "\n".join(lines)


SECTIONS: list[Callable[[], str]] = [
    core_section,
    wide_section,
    throughput_section,
    simulate_section,
    scheduler_section,
    preemption_section,
    exporter_section,
    apiserver_section,
    nodes_section,
    devices_section,
    dra_section,
]


def render() -> str:
    parts = [
        "# Benchmarks",
        "",
        f"Machine: {machine()}.  ",
        f"Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}; {_conditions()}: other work on the machine, or a "
        "slower one, slows every figure; the Python speed (ten million additions in a Python loop) scales with the "
        "machine's speed for Python code.  ",
        "Command: `make bench` (runs `python -m knuma.bench.report --output docs/benchmarks.md`).",
        "",
    ]
    for section in SECTIONS:
        print(f"running {section.__name__} ...", file=sys.stderr)
        parts += [section(), ""]
    return "\n".join(parts)


def rerun(existing: str, names: list[str]) -> str:
    """`existing` (a report) with the sections `names` (`wide` for `wide_section`) run again and put in place of
    their old text (appended when new), each saying when and at what load it ran, since the header's date is the
    whole run's."""
    by_name = {section.__name__.removesuffix("_section"): section for section in SECTIONS}
    unknown = sorted(set(names) - set(by_name))
    if unknown:
        raise SystemExit(f"unknown section(s) {', '.join(unknown)}; sections: {', '.join(by_name)}")
    text = existing
    for name in names:
        print(f"running {name} ...", file=sys.stderr)
        body = by_name[name]()
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        body += f"\n\nThis section alone: {when}, {_conditions()} (`python -m knuma.bench.report --only {name}`)."
        heading = body.splitlines()[0]
        start = text.find(heading + "\n")
        if start < 0:  # a section the report does not have yet: at the end (a full run puts it in its place)
            text = text.rstrip("\n") + "\n\n" + body + "\n"
            continue
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + body + ("\n" + text[end:] if end >= 0 else "\n")
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="SECTION",
        help="run only this section (core, wide, throughput, ...) and replace it in --output; repeatable",
    )
    args = parser.parse_args(argv)
    if args.only:
        text = rerun(args.output.read_text() if args.output.exists() else "# Benchmarks\n", args.only)
        args.output.write_text(text)
        print(text)
        return
    text = render()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
