"""Every table fits the width it is given (`COLUMNS`, piped here) through `knuma.cli.output.fitted_table`: at 80
columns the optional columns are left out and named under the table, verdicts and names stay whole; at 200 columns
everything is shown; `-o wide` shows every column whatever the width; piped without `COLUMNS`, `knuma check`'s
problems stay one line each for grep. Commands run through the console script, against a real API server where they
need one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from knuma.cli.output import Column, fitted_table, table_lines, wrap_lines
from knuma.cli.up import summary_view
from knuma.kube.client import http_client
from knuma.local.apiserver.proxy import ProxyRequest, ProxyResponse
from knuma.local.up.summary import ClusterSummary, NodeRow
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

ROOT = Path(__file__).resolve().parents[2]
KNUMA = str(Path(sys.executable).with_name("knuma"))
WIDTHS = [80, 200]
BENCH = ["bench", "--nodes", "20", "--pods", "20", "--reference-pods", "2", "--uncached-pods", "5"]
BENCH += ["--new-shape-pods", "5"]
BENCH_DROP_ORDER = ["p90", "p50", "pods", "p99", "latency p99 ms"]


def knuma(*args: str, columns: int | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([KNUMA, *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def note(text: str) -> str | None:
    """The `not shown at N columns: ...` line (it may wrap)."""
    match = re.search(r"not shown at \d+ columns: [^(]*\([^)]*\)", " ".join(text.split()))
    return match.group(0) if match else None


def test_fitted_table_drops_the_least_useful_column_first_and_names_it() -> None:
    columns = [Column("NAME"), Column("VERDICT"), Column("DETAIL", drop=1), Column("MORE", drop=2)]
    rows = [["node-a", "TopologyAffinityError: cannot align", "x" * 20, "y" * 30]]
    whole = fitted_table(columns, rows, width=200)
    assert whole.dropped == () and whole.note is None
    narrow = fitted_table(columns, rows, width=80)
    assert narrow.dropped == ("MORE",)  # MORE goes first; the rest then fits
    assert narrow.note == "not shown at 80 columns: MORE (-o wide or -o json shows them)"
    lines = table_lines(narrow)
    assert widest("\n".join(lines)) <= 80 and "TopologyAffinityError: cannot align" in "\n".join(lines)
    tiny = table_lines(fitted_table(columns, rows, width=30))
    assert widest("\n".join(tiny)) <= 30 and "…" not in "".join(tiny)  # folded, never cut
    assert "TopologyAffinityError" in "".join(line.replace("│", "").replace(" ", "") for line in tiny)
    wide = fitted_table(columns, rows, width=80, wide=True)
    assert wide.dropped == () and wide.width > 80


def test_wrap_lines_keeps_indentation_and_words() -> None:
    text = "    reason: " + " ".join(f"word{i}" for i in range(40))
    wrapped = wrap_lines([text, "short"], 60)
    assert widest("\n".join(wrapped)) <= 60 and wrapped[-1] == "short"
    assert all(line.startswith("        ") for line in wrapped[1:-1])
    assert " ".join(" ".join(wrapped[:-1]).split()) == " ".join(text.split())


@pytest.mark.parametrize("width", WIDTHS)
def test_bench(width: int) -> None:
    done = knuma(*BENCH, columns=width)
    assert done.returncode == 0, done.stderr
    assert widest(done.stdout) <= width, done.stdout
    for key in ("scheduler", "avg pods/s", "latency p50 ms", "knuma (vectorised)", "reference (per node)"):
        assert key in done.stdout
    if width == 80:  # the measured numbers' widths vary: how many go depends on them, never which go first
        found = note(done.stdout)
        assert found is not None and found.endswith(" (-o wide or -o json shows them)"), done.stdout
        dropped = found.removeprefix("not shown at 80 columns: ").split(" (")[0].split(", ")
        assert set(dropped) == set(BENCH_DROP_ORDER[: len(dropped)]), found
    else:
        assert note(done.stdout) is None and all(h in done.stdout for h in ("p50", "p90", "p99", "latency p99 ms"))


def test_bench_wide_shows_every_column_on_a_narrow_terminal() -> None:
    done = knuma(*BENCH, "-o", "wide", columns=80)
    assert done.returncode == 0, done.stderr
    assert note(done.stdout) is None
    assert all(h in done.stdout for h in ("pods", "p50", "p90", "p99", "latency p99 ms"))


@pytest.fixture(scope="module")
def unhealthy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApiServer]:
    """Two nodes without NRT, exporter or readable configz, and no scheduler: eight problems to report."""

    def forbidden(request: ProxyRequest) -> ProxyResponse:
        body = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403}
        body["message"] = 'nodes is forbidden: User "u" cannot get resource "nodes/proxy"'
        return ProxyResponse(403, json.dumps(body).encode())

    with apiserver_in_thread(tmp_path_factory.mktemp("check")) as api:
        with http_client(api.kubeconfig) as http:
            for name in ("worker-numa-a-000", "worker-numa-b-001"):
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
                assert http.post("/api/v1/nodes", json=node).status_code == 201
                api.register_node_proxy(name, forbidden)
        yield api


@pytest.mark.parametrize("width", [*WIDTHS, None], ids=["80", "200", "piped"])
def test_check(unhealthy_cluster: RunningApiServer, width: int | None) -> None:
    done = knuma("check", "--kubeconfig", str(unhealthy_cluster.kubeconfig), columns=width)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert widest(done.stdout) <= (width or 1000), done.stdout
    assert lines[0].split()[:3] == ["NODE", "NRT", "FRESH"]
    assert lines[1].split()[:3] == ["worker-numa-a-000", "missing", "-"]
    assert lines[-1] == "FAILED>>: the cluster configuration does NOT look ok!"
    report = json.loads(
        knuma("check", "--kubeconfig", str(unhealthy_cluster.kubeconfig), "-o", "json", columns=80).stdout
    )
    errors = [line for line in lines if line.startswith("ERROR#")]
    assert len(errors) == len(report["errors"]) == 8
    if width is None:  # piped without COLUMNS: each problem on its line, as a script greps it
        assert errors[1].endswith(
            'detected "HTTP 403: nodes is forbidden: User \\"u\\" cannot get resource \\"nodes/proxy\\""'
        )
    fixes = " ".join(" ".join(done.stdout.split("\n  fix: ")[1:]).split())
    assert 'grant a ClusterRole rule {apiGroups: [""], resources: [nodes/proxy], verbs: [get]}' in fixes


def test_check_wide_keeps_whole_lines(unhealthy_cluster: RunningApiServer) -> None:
    done = knuma("check", "--kubeconfig", str(unhealthy_cluster.kubeconfig), "-o", "wide", columns=80)
    assert done.returncode == 1, done.stderr
    assert widest(done.stdout) > 80 and "EXPORTER" in done.stdout.splitlines()[0]
    assert sum(line.startswith("ERROR#") for line in done.stdout.splitlines()) == 8


@pytest.mark.parametrize("width", WIDTHS)
def test_claims_schedule(width: int) -> None:
    files = ["dra-classes.yaml", "dgx-nodes.yaml", "pod-gpu-nic.yaml"]
    args = [part for name in files for part in ("-f", str(ROOT / "examples/devices" / name))]
    done = knuma("claims", "schedule", *args, "-v", columns=width)
    assert done.returncode == 0, done.stderr
    assert widest(done.stdout) <= width, done.stdout
    lines = done.stdout.splitlines()
    assert "dgx-0: could not satisfy these claims: ml/trainer-devices" in lines
    assert "dgx-1: satisfied all claims with score 100 (same PCIe root, NUMA 0)" in lines
    reason = " ".join(" ".join(lines[lines.index("NODE RESULTS") :]).split())
    assert "only NUMA 2 or NUMA 3, and no allocation of the claims fits there" in reason


def eight_numa_summary() -> ClusterSummary:
    nodes = tuple(
        NodeRow(f"worker-{i:03d}", True, "eight-numa", "single-numa-node", 3, tuple((30 - z, 32) for z in range(8)))
        for i in range(3)
    )
    return ClusterSummary(nodes, {"Running": 9, "TopologyAffinityError": 1}, 3)


@pytest.mark.parametrize("width", WIDTHS)
def test_up_summary(width: int) -> None:
    console = Console(width=width, color_system=None)
    with console.capture() as captured:
        console.print(summary_view(eight_numa_summary(), "knuma up — 3x eight-numa", width))
    text = captured.get()
    assert widest(text) <= width, text
    for key in ("NODE", "READY", "PODS", "FREE CPUS PER NUMA ZONE", "worker-002", "7: 23/32", "TopologyAffinityError"):
        assert key in text, text
    if width == 80:
        assert note(text) == "not shown at 80 columns: SHAPE, POLICY (a wider terminal shows them)"
    else:
        assert note(text) is None and "eight-numa" in text and "single-numa-node" in text


@pytest.mark.parametrize("command", [[], ["claims"]], ids=["knuma", "claims"])
def test_command_lists_fit_80_columns_without_cutting_a_summary(command: list[str]) -> None:
    done = knuma(*command, "-h", columns=80)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("Commands:\n")[1].splitlines()
    assert widest(done.stdout) <= 80 and listed, done.stdout
    assert not [line for line in listed if line.rstrip().endswith("...")], done.stdout
    names = {line.split()[0] for line in listed}
    assert {"schedule", "allocate"} == names if command else {"check", "bench", "up", "claims"} <= names


@pytest.mark.parametrize("command", ["scheduler", "exporter", "deploy", "claims schedule"])
def test_help_names_every_option_whole_at_80_columns(command: str) -> None:
    done = knuma(*command.split(), "-h", columns=80)
    assert done.returncode == 0, done.stderr
    assert widest(done.stdout) <= 80 and "…" not in done.stdout, done.stdout
    if command == "scheduler":
        assert "--leader-elect-resource-namespace" in done.stdout
