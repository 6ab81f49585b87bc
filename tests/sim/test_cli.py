from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from knuma.cli.main import app
from knuma.testbed.shapes import BUILTIN_SHAPES

from .conftest import small_scenario

runner = CliRunner()


def _scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(small_scenario()))
    return path


def test_json_shape(tmp_path: Path) -> None:
    result = runner.invoke(app, ["simulate", "--scenario", str(_scenario_file(tmp_path)), "-o", "json", "--seed", "1"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"scenario", "results"}
    assert data["scenario"] == "tiny"
    assert set(data["results"]) == {
        "default",
        "nrt-passthrough",
        "nrt-overreserve",
        "nrt-discardreserved",
        "knuma",
        "optimal",
    }
    types = {
        "placed": int,
        "running": int,
        "topology_affinity_errors": int,
        "pending": int,
        "false_negative_pending": int,
        "cpu_utilization": float,
        "cpus_placed": float,
        "throughput_pods_per_s": float,
    }
    for metrics in data["results"].values():
        assert list(metrics) == list(types)
        for key, kind in types.items():
            assert isinstance(metrics[key], kind), (key, metrics[key])
    assert data["results"]["knuma"]["topology_affinity_errors"] == 0


@pytest.mark.slow
def test_table_verdict_and_report(tmp_path: Path) -> None:
    report = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--scenario",
            str(_scenario_file(tmp_path)),
            "--schedulers",
            "nrt-passthrough,knuma",
            "--nrt-period",
            "30",
            "--report",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "TopologyAffinityError" in result.stdout
    assert "knuma: 0 TopologyAffinityError" in result.stdout
    assert "NRT every 30 s" in " ".join(result.stdout.split())
    for name in ("index.html", "utilization.png", "errors.png", "pending.png", "zones.png", "metrics.json"):
        assert (report / name).stat().st_size > 0
    assert "knuma" in (report / "index.html").read_text()


def test_the_cpu_optimum_is_a_column_and_bounds_every_scheduler_by_cpus(tmp_path: Path) -> None:
    scenario = str(_scenario_file(tmp_path))
    names = "default,knuma,optimal,optimal-cpus"
    result = runner.invoke(app, ["simulate", "--scenario", scenario, "--schedulers", names, "-o", "json"])
    assert result.exit_code == 0, result.output
    results = json.loads(result.stdout)["results"]
    best = results["optimal-cpus"]["cpus_placed"]
    assert all(metrics["cpus_placed"] <= best for metrics in results.values()), results
    assert results["optimal"]["placed"] >= results["optimal-cpus"]["placed"]
    table = runner.invoke(app, ["simulate", "--scenario", scenario, "--schedulers", "knuma,optimal-cpus"])
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    assert "CPUs placed (end)" in text and "optimal-cpus: CP-SAT (most CPUs)" in text
    knuma = results["knuma"]["cpus_placed"]
    assert f"CPUs placed {knuma:g} = {knuma / best:.1%} of optimal-cpus ({best:g}" in text


def test_list_scenarios() -> None:
    result = runner.invoke(app, ["simulate", "--list-scenarios"])
    assert result.exit_code == 0
    for name in ("default", "burst", "lag60", "fragmented", "devices", "restricted"):
        assert name in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "nope"], "unknown scenario 'nope'"),
        (["--scenario", "nope"], "restart, dra) and not a file"),  # every built-in named, dra too
        (["--schedulers", "knuma,fifo"], "unknown scheduler(s) fifo"),
        (["--scenario", "dra", "--nrt-period", "5"], "--nrt-period does not apply to scenario dra"),
        (["--scenario", "dra", "--cluster", "c.yaml", "--workload", "w.yaml"], "--cluster and --workload do not"),
    ],
)
def test_errors_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["simulate", *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_bad_workload_file(tmp_path: Path) -> None:
    bad = tmp_path / "workload.yaml"
    bad.write_text("templates: [{name: x}]\n")
    result = runner.invoke(app, ["simulate", "--workload", str(bad)])
    assert result.exit_code == 2
    assert "give `requests`" in result.stderr


def test_spec_errors_name_the_file_they_are_in(tmp_path: Path) -> None:
    """A scenario file's own keys, and the cluster and workload files it points at, are named in the error: the
    user sees which of the three files to fix."""
    raw = small_scenario()
    cluster = raw.pop("cluster")
    cluster["pools"][0]["cuont"] = 2
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(raw.pop("workload")))
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({**raw, "clusterFile": "cluster.yaml", "workloadFile": "workload.yaml"}))
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'cluster.yaml'}.pools[0]: unknown field(s) cuont" in result.stderr
    scenario.write_text(yaml.safe_dump({**small_scenario(), "nrtPeriod": "fast"}))
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario)])
    assert result.exit_code == 2
    assert f"{scenario}.nrtPeriod: expected a number" in result.stderr


@pytest.mark.parametrize(
    ("flag", "document", "message"),
    [
        (
            "--workload",
            {"kind": "SimCluster", "pools": []},
            "this is a SimCluster, not a SimWorkload; give it to --cluster",
        ),
        (
            "--cluster",
            {"kind": "SimWorkload", "templates": []},
            "this is a SimWorkload, not a SimCluster; give it to --workload",
        ),
        (
            "--scenario",
            {"kind": "SimCluster", "pools": []},
            "this is a SimCluster, not a SimScenario; give it to --cluster",
        ),
        (
            "--workload",
            {"kind": "Deployment", "spec": {}},
            "this is a Deployment, not a SimWorkload; a workload takes it",
        ),
    ],
)
def test_a_spec_given_to_the_wrong_flag_says_which_flag(
    tmp_path: Path, flag: str, document: dict[str, object], message: str
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(document))
    result = runner.invoke(app, ["simulate", flag, str(path)])
    assert result.exit_code == 2
    assert message in result.stderr


def test_custom_cluster_and_workload_files() -> None:
    examples = Path(__file__).resolve().parents[2] / "examples" / "sim"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--cluster",
            str(examples / "cluster.yaml"),
            "--workload",
            str(examples / "workload.yaml"),
            "--schedulers",
            "knuma",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]["knuma"]["topology_affinity_errors"] == 0


def test_same_seed_same_json(tmp_path: Path) -> None:
    scenario = str(_scenario_file(tmp_path))

    def results(seed: str) -> dict[str, dict[str, object]]:
        args = ["simulate", "--scenario", scenario, "--schedulers", "nrt-passthrough,knuma", "-o", "json"]
        result = runner.invoke(app, [*args, "--seed", seed])
        assert result.exit_code == 0, result.output
        data: dict[str, dict[str, dict[str, object]]] = json.loads(result.stdout)
        for metrics in data["results"].values():
            del metrics["throughput_pods_per_s"]  # wall clock
        return data["results"]

    assert results("7") == results("7")


def test_a_bad_report_path_is_a_one_line_error_before_the_simulation(tmp_path: Path) -> None:
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    for report, message in (
        (
            a_file,
            "is a file, not a directory; give a directory (the report is DIR/index.html) or a path ending in .html",
        ),
        (a_file / "sub", "cannot write into"),
    ):
        result = runner.invoke(app, ["simulate", "--scenario", str(_scenario_file(tmp_path)), "--report", str(report)])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert result.output.startswith(f"error: --report {report}: ")
        assert message in result.output
        assert "placed" not in result.output  # refused before anything ran


def test_report_to_an_html_file_writes_that_file(tmp_path: Path) -> None:
    page = tmp_path / "out" / "run.html"
    result = runner.invoke(
        app,
        ["simulate", "--scenario", str(_scenario_file(tmp_path)), "--schedulers", "default", "--report", str(page)],
    )
    assert result.exit_code == 0, result.output
    assert page.is_file() and not (page / "index.html").exists()
    text = page.read_text()
    assert 'src="run_files/utilization.png"' in text
    assert (tmp_path / "out" / "run_files" / "utilization.png").stat().st_size > 0
    assert (tmp_path / "out" / "run_files" / "metrics.json").is_file()


def test_jobs_change_nothing_but_the_time(tmp_path: Path) -> None:
    path = str(_scenario_file(tmp_path))
    documents = []
    for jobs in ("1", "2"):
        args = ["simulate", "--scenario", path, "-o", "json", "--schedulers", "default,nrt-overreserve,knuma"]
        result = runner.invoke(app, [*args, "--jobs", jobs])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        for metrics in data["results"].values():
            del metrics["throughput_pods_per_s"]
        documents.append(data)
    assert documents[0] == documents[1]
    bad = runner.invoke(app, ["simulate", "--scenario", path, "--jobs", "0"])
    assert bad.exit_code == 2
    assert "--jobs" in bad.output


def test_a_narrow_terminal_wraps_the_table_instead_of_cutting_labels() -> None:
    """At 90 columns the headline row and the scheduler names fold onto more lines; nothing ends in an ellipsis."""
    schedulers = "default,nrt-passthrough,nrt-overreserve,nrt-discardreserved,knuma"
    args = ["simulate", "--scenario", "devices", "--schedulers", schedulers, "-j", "1"]
    result = runner.invoke(app, args, env={"COLUMNS": "90"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert "TopologyAffin" in result.stdout and "discardreser" in result.stdout


def test_malformed_yaml_is_one_line_naming_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "scenario.yaml"
    bad.write_text("cluster:\n  pools: [\n  - name: a\n")
    result = runner.invoke(app, ["simulate", "--scenario", str(bad)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: malformed YAML at line ") and result.stderr.count("\n") == 1


def test_a_file_that_is_not_utf8_is_one_line_naming_the_byte(tmp_path: Path) -> None:
    bad = tmp_path / "scenario.yaml"
    bad.write_bytes(b"name: \xff\xfe tiny\n")
    result = runner.invoke(app, ["simulate", "--scenario", str(bad)])
    assert result.exit_code == 2
    assert result.stderr == f"error: cannot read {bad}: not UTF-8 text (byte 0xff at offset 6); save it as UTF-8\n"


def _with(path: tuple[str | int, ...], value: object) -> dict[str, object]:
    """`small_scenario()` with the field at `path` (keys and list indexes) set to `value`."""
    raw = small_scenario()
    raw["workload"]["templates"][0]["lifetime"] = {"distribution": "exponential", "mean": 300}
    node: Any = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return raw


def _assert_refused(tmp_path: Path, path: tuple[str | int, ...], value: object, message: str) -> None:
    """The default scenario with `value` at `path` is refused before it runs: one line `error: FILE.message`, exit 2."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(_with(path, value)))
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario), "--schedulers", "knuma", "-j", "1"])
    assert (result.exit_code, result.stderr) == (2, f"error: {scenario}.{message}\n")


NEVER_ENDS = "; for pods that never end write `distribution: infinite`"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("duration",),
            math.nan,
            "duration: must be a finite number, got nan",
        ),
        (
            ("duration",),
            math.inf,
            "duration: must be a finite number, got inf; leave `duration` out to end two exporter periods after the "
            "last arrival",
        ),
        (("bindDelay",), math.inf, "bindDelay: must be a finite number, got inf"),
        pytest.param(
            ("nrtPeriod",), 10**400, f"nrtPeriod: must be a finite number, got {10**400}", id="beyond-a-float"
        ),
        (("workload", "arrival", "rate"), math.nan, "workload.arrival.rate: must be a finite number, got nan"),
        (("workload", "arrival", "rate"), math.inf, "workload.arrival.rate: must be a finite number, got inf"),
        (
            ("workload", "templates", 0, "weight"),
            math.nan,
            "workload.templates[0].weight: must be a finite number, got nan",
        ),
        (
            ("workload", "templates", 0, "weight"),
            math.inf,
            "workload.templates[0].weight: must be a finite number, got inf",
        ),
        (
            ("workload", "templates", 0, "lifetime", "mean"),
            math.inf,
            f"workload.templates[0].lifetime.mean: must be a finite number, got inf{NEVER_ENDS}",
        ),
        (
            ("workload", "templates", 0, "lifetime", "mean"),
            math.nan,
            "workload.templates[0].lifetime.mean: must be a finite number, got nan",
        ),
        (
            ("workload", "templates", 0, "lifetime"),
            math.inf,
            "workload.templates[0].lifetime: must be a finite number, got inf; for pods that never end write "
            "`infinite`",
        ),
        (("schedulerRestarts",), [math.nan], "schedulerRestarts[0]: must be a finite number, got nan"),
    ],
)
def test_a_number_that_is_not_finite_is_refused_naming_the_field(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    """`.nan` and `.inf` (and integers beyond a float) are YAML numbers, but no simulation can run on them: NaN
    rates simulated nothing, an infinite weight or mean lifetime was a traceback."""
    _assert_refused(tmp_path, path, value, message)


def _pod(metadata: object) -> dict[str, object]:
    """A pod template given as a Pod manifest with `metadata`."""
    container = {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
    return {"manifest": {"kind": "Pod", "metadata": metadata, "spec": {"containers": [container]}}}


def _deployment(template_metadata: object) -> dict[str, object]:
    container = {"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
    template = {"metadata": template_metadata, "spec": {"containers": [container]}}
    return {"manifest": {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": template}}}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("kind",), [], "kind: expected a string, got list"),
        (("apiVersion",), {"v": 1}, "apiVersion: expected a string, got dict"),
        (("metadata",), "abc", "metadata: expected a mapping, got str"),
        (("metadata",), {"name": ["a"]}, "metadata.name: expected a string, got list"),
        (("name",), 2024, "name: expected a string, got 2024; quote it to make it one"),
        (("description",), ["a"], "description: expected a string, got list"),
        (("clusterFile",), ["c.yaml"], "clusterFile: expected a string, got list"),
        (("cluster", "kind"), {}, "cluster.kind: expected a string, got dict"),
        (
            ("cluster", "pools", 0, "name"),
            True,
            "cluster.pools[0].name: expected a string, got True; quote it to make it one",
        ),
        (
            ("cluster", "pools", 0, "shape"),
            ["small"],
            f"cluster.pools[0].shape: unknown shape ['small']; known shapes: {', '.join(sorted(BUILTIN_SHAPES))}",
        ),
        (("workload", "kind"), [], "workload.kind: expected a string, got list"),
        (("workload", "arrival"), [], "workload.arrival: expected a mapping, got list"),
        (("workload", "templates", 0, "name"), {"a": 1}, "workload.templates[0].name: expected a string, got dict"),
        (("workload", "templates", 0, "limits"), [], "workload.templates[0].limits: expected a mapping, got list"),
        (
            ("workload", "templates", 0),
            _pod("abc"),
            "workload.templates[0].manifest.metadata: expected a mapping, got str",
        ),
        (
            ("workload", "templates", 0),
            _deployment(["x"]),
            "workload.templates[0].manifest.spec.template.metadata: expected a mapping, got list",
        ),
        (
            ("workload", "templates", 0),
            {**_pod({"name": "p"}), "priority": 1, "manifest": {"kind": "Pod", "spec": "abc"}},
            "workload.templates[0].manifest.spec: expected a mapping, got str",
        ),
        (("recreate",), [], "recreate: expected a mapping, got list"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    """A list or a string where a mapping belongs, a mapping or a number where a string belongs: one error line
    naming the field, exit 2 (`kind: []` and a manifest's `metadata: abc` were tracebacks; `recreate: []` and
    `name: [1]` were taken as if valid)."""
    _assert_refused(tmp_path, path, value, message)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("recreate",),
            {"enabled": "false"},
            "recreate.enabled: expected true or false, got the string 'false'; write it without quotes",
        ),
        (
            ("recreate",),
            {"enabled": "true", "delay": 5},
            "recreate.enabled: expected true or false, got the string 'true'; write it without quotes",
        ),
        (("recreate",), {"enabled": 1}, "recreate.enabled: expected true or false, got 1"),
        (("optimal",), 0, "optimal: expected auto, true or false, got 0"),
    ],
)
def test_a_boolean_given_as_a_string_or_a_number_is_refused(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    """`enabled: "false"` is a non-empty string: it was read as true and recreated every rejected pod; Kubernetes'
    configuration decoders refuse a string where a boolean belongs, and so does the scenario spec."""
    _assert_refused(tmp_path, path, value, message)


def _shape(**fields: object) -> dict[str, object]:
    """The small scenario on a custom shape `s` with `fields` over a 2-zone, 8-CPU one."""
    shape = {"numaZones": 2, "cpusPerZone": 8, "memoryPerZone": "16Gi", **fields}
    return {"shapes": {"s": shape}, "pools": [{"name": "n", "shape": "s", "count": 4}]}


NIC = {"driver": "nic.sim.knuma.io", "prefix": "nic", "model": "e810"}
PODS_LIMIT = "the most pods a workload may have (Kubernetes' limit per cluster)"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("workload", "pods"), 10**19, f"workload.pods: {10**19} is more than 150000, {PODS_LIMIT}; lower it"),
        (("workload", "pods"), True, "workload.pods: expected a non-negative integer, got True"),
        (
            ("workload", "templates", 0, "count"),
            10**6,
            f"workload.templates[0].count: 1000000 is more than 150000, {PODS_LIMIT}; lower it",
        ),
        (
            ("workload", "templates"),
            [{"name": f"g{i}", "requests": {"cpu": "1", "memory": "1Gi"}, "count": 100_000} for i in range(2)],
            f"workload.templates: their counts add up to 200000, more than 150000, {PODS_LIMIT}; lower them",
        ),
        (
            ("workload", "templates", 0),
            _deployment({}) | {"manifest": {"kind": "Deployment", "spec": {"replicas": "3", "template": {}}}},
            "workload.templates[0].manifest.spec.replicas: expected a non-negative integer, got '3'",
        ),
        (
            ("workload", "templates", 0, "weight"),
            1e300,
            "workload.templates[0].weight: 1e+300 is more than 1000000, the largest weight (weights are shares "
            "relative to each other); lower it",
        ),
        (
            ("workload", "templates", 0, "terminationGracePeriodSeconds"),
            2**63,
            f"workload.templates[0].terminationGracePeriodSeconds: {2**63} is more than {2**63 - 1}, the largest "
            "int64 (the field's type in Kubernetes); lower it",
        ),
        (
            ("cluster", "pools", 0, "count"),
            100_000_000,
            "cluster.pools[0].count: 100000000 is more than 50000, the most nodes a simulated cluster may have; "
            "lower it",
        ),
        (
            ("cluster", "pools"),
            [{"name": f"p{i}", "shape": "small", "count": 30_000} for i in range(2)],
            "cluster.pools: 60000 nodes in all is more than 50000, the most nodes a simulated cluster may have; "
            "lower the counts",
        ),
        (
            ("cluster",),
            _shape(numaZones=64),
            "cluster.shapes.s.numaZones: 64 is more than 16, the most NUMA zones knuma models (the hint merge walks "
            "all 2^zones masks); lower it",
        ),
        (
            ("cluster",),
            _shape(cpusPerZone=10**9),
            "cluster.shapes.s.cpusPerZone: 1000000000 is more than 16384, the most CPUs a NUMA zone may have; lower it",
        ),
        (("cluster",), _shape(reservedCPUs=-1), "cluster.shapes.s.reservedCPUs: expected at least 0, got -1"),
        (("cluster",), _shape(maxPods=-1), "cluster.shapes.s.maxPods: expected at least 0, got -1"),
        (
            ("cluster",),
            _shape(maxPods=2**31),
            f"cluster.shapes.s.maxPods: {2**31} is more than {2**31 - 1}, the kubelet's (an int32); lower it",
        ),
        (
            ("cluster",),
            _shape(dra=[{**NIC, "perZone": 10**9}]),
            "cluster.shapes.s.dra[0].perZone: 1000000000 is more than 128, the devices one ResourceSlice holds; "
            "lower it",
        ),
        (
            ("cluster",),
            _shape(dra=[{**NIC, "perZone": 100}]),
            "cluster.shapes.s.dra[0].perZone: 100 devices on each of 2 zones make 200 devices of nic.sim.knuma.io on "
            "a node, more than the 128 its ResourceSlice holds; lower it",
        ),
        (
            ("cluster",),
            _shape(dra=[{**NIC, "perZone": 1, "capacity": {"bandwidth": "-100G"}}]),
            "cluster.shapes.s.dra[0].capacity.bandwidth.value: '-100G' is negative; a device's capacity is 0 or more",
        ),
        (
            ("cluster",),
            _shape(dra=[{**NIC, "perZone": 1, "model": 810}]),
            "cluster.shapes.s.dra[0].model: expected a string, got 810",
        ),
        (
            ("cluster",),
            _shape(dra=[{**NIC, "perZone": 1, "driver": ["nic.sim.knuma.io"]}]),
            "cluster.shapes.s.dra[0].driver: expected a string, got ['nic.sim.knuma.io']",
        ),
        (
            ("cluster",),
            _shape(sockets=3, numaZones=4),
            "cluster.shapes.s.sockets: 3 sockets cannot hold 4 NUMA zones evenly (every socket holds as many zones, "
            "as the kubelet's CPU topology assumes); give a divisor of numaZones",
        ),
        (
            ("recreate",),
            {"enabled": True, "maxPerPod": 10**9},
            "recreate.maxPerPod: 1000000000 is more than 100, the most recreations of one pod a simulation models; "
            "lower it",
        ),
        (("recreate",), {"maxPerPod": "3"}, "recreate.maxPerPod: expected a non-negative integer, got '3'"),
        (("recreate",), {"maxPerPod": -1}, "recreate.maxPerPod: expected a non-negative integer, got -1"),
    ],
)
@pytest.mark.timeout(60)  # before the limits, 10^8 nodes or 64 zones never finished
def test_a_count_beyond_its_limit_is_refused_naming_the_field_the_value_and_the_limit(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    """A count the simulation cannot hold (10^19 pods: MemoryError) or never finishes with (10^8 nodes, 64 NUMA
    zones) is refused before anything is built, with the limit; a count of the wrong type or sign too."""
    _assert_refused(tmp_path, path, value, message)


def test_the_cluster_flag_has_the_scenario_node_limit(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump({"pools": [{"shape": "small", "count": 100_000_000}]}))
    result = runner.invoke(app, ["simulate", "--cluster", str(cluster), "--schedulers", "knuma", "-j", "1"])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {cluster}.pools[0].count: 100000000 is more than 50000, the most nodes a simulated cluster may "
        "have; lower it\n",
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("workload", "templates", 0, "requests"),
            {"cpu": "1E", "memory": "1Gi"},
            "workload.templates[0]: the pod requests 1E cpu, more than a node can hold (an int64 of milli-CPUs); "
            "lower it",
        ),
        (
            ("cluster",),
            _shape(memoryPerZone="1000E"),
            "cluster.shapes.s.memoryPerZone: '1000E' on each of 2 zones is more than a node's allocatable can hold "
            "(an int64 of base units); lower it",
        ),
        (
            ("cluster",),
            _shape(resourcesPerZone={"example.com/nic": "5E"}),
            "cluster.shapes.s.resourcesPerZone.example.com/nic: '5E' on each of 2 zones is more than a node's "
            "allocatable can hold (an int64 of base units); lower it",
        ),
        (
            ("cluster",),
            _shape(resourcesPerZone={"example.com/nic": -1}),
            "cluster.shapes.s.resourcesPerZone.example.com/nic: must not be negative, got -1",
        ),
        (
            ("cluster",),
            _shape(reservedMemoryPerZone="-1Gi"),
            "cluster.shapes.s.reservedMemoryPerZone: must not be negative, got '-1Gi'",
        ),
    ],
)
def test_a_quantity_a_node_cannot_hold_or_a_negative_one_is_refused(
    tmp_path: Path, path: tuple[str | int, ...], value: object, message: str
) -> None:
    """The scheduler counts allocatable and requests in int64, as kube-scheduler does: a pod asking for 1E CPUs or a
    node with 1000E of memory per zone was an OverflowError traceback; a negative device count or reservation was
    taken as if it were one."""
    _assert_refused(tmp_path, path, value, message)


def test_arrivals_before_the_run_starts_are_refused(tmp_path: Path) -> None:
    """The run starts at 0 s (exporters, samples): a negative `arrival.start` placed pods before it."""
    start = ("workload", "arrival", "start")
    _assert_refused(tmp_path, start, -100, "workload.arrival.start: expected a number >= 0, got -100")


LENGTH = "more than the 10,000,000 a run may take"
SHORTEN = "or shorten the run (duration, or the arrivals: pods / arrival.rate)"


@pytest.mark.parametrize(
    ("overrides", "flags", "message"),
    [
        (
            {"duration": 1e300},
            [],
            "1e+300 simulated seconds (duration) of 4 nodes publishing NRT every 60 s (nrtPeriod) make 6.67e+298 "
            f"events, {LENGTH}; lengthen nrtPeriod {SHORTEN}",
        ),
        (
            {"duration": 3600, "nrtPeriod": 1e-300},
            [],
            "3600 simulated seconds (duration) of 4 nodes publishing NRT every 1e-300 s (nrtPeriod) make 1.44e+304 "
            f"events, {LENGTH}; lengthen nrtPeriod {SHORTEN}",
        ),
        (
            {"duration": 3600, "resyncPeriod": 1e-300},
            [],
            "3600 simulated seconds (duration) of a scheduler resync every 1e-300 s (resyncPeriod) make 3.6e+303 "
            f"events, {LENGTH}; lengthen resyncPeriod {SHORTEN}",
        ),
        (
            {"duration": 3_600_000},
            ["--nrt-period", "0.001"],
            "3.6e+06 simulated seconds (duration) of 4 nodes publishing NRT every 0.001 s (nrtPeriod) make 1.44e+10 "
            f"events, {LENGTH}; lengthen nrtPeriod {SHORTEN}",
        ),
    ],
)
@pytest.mark.timeout(60)  # before the check, these runs never finished
def test_a_run_that_would_never_finish_is_refused_before_it_starts(
    tmp_path: Path, overrides: dict[str, object], flags: list[str], message: str
) -> None:
    """Each value is valid alone; together they make more exporter publications or scheduler resyncs than a run can
    simulate (a duration of 1e300 s, a period of 1e-300 s): one error line instead of a run that never ends."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(small_scenario(**overrides)))
    args = ["simulate", "--scenario", str(scenario), "--schedulers", "knuma,nrt-overreserve", "-j", "1", *flags]
    result = runner.invoke(app, args)
    assert (result.exit_code, result.stderr) == (2, f"error: scenario tiny: {message}\n")


@pytest.mark.timeout(60)
def test_arrivals_spread_over_an_endless_time_are_refused_before_the_run(tmp_path: Path) -> None:
    """Without a duration the run lasts until the last arrival: at 1e-300 pods/s that is about 1e302 s."""
    raw = small_scenario()
    raw["workload"]["arrival"] = {"process": "poisson", "rate": 1e-300}
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(raw))
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario), "--schedulers", "knuma", "-j", "1"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: scenario tiny: ")
    assert "simulated seconds (the last arrival plus two exporter periods) of 4 nodes publishing NRT every 60 s" in (
        result.stderr
    )
    assert result.stderr.endswith(f"{LENGTH}; lengthen nrtPeriod {SHORTEN}\n") and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: x\nduration: " + "1" * 5000 + "\n",
            "a value cannot be read (Exceeds the limit (4300 digits) for integer string conversion: value has 5000 "
            "digits); quote it if it is text",
        ),
        (
            "name: x\ndescription: 2024-13-45\n",
            "a value cannot be read (month must be in 1..12); quote it if it is text",
        ),
        ("name: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply to read; flatten it"),
    ],
    ids=["5000-digits", "no-such-date", "deep"],
)
def test_yaml_that_parses_but_cannot_be_read_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    """Well-formed YAML whose values Python refuses (an integer of 5000 digits, a date with month 13) or cannot
    nest that deep: a ValueError or RecursionError traceback before."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(text)
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario)])
    assert (result.exit_code, result.stderr) == (2, f"error: {scenario}: {message}\n")


def test_a_date_where_a_string_belongs_says_to_quote_it(tmp_path: Path) -> None:
    """YAML reads `2024-12-31` as a date: a name or a description given so is refused with what to do."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(small_scenario()) + "description: 2024-12-31\n")
    result = runner.invoke(app, ["simulate", "--scenario", str(scenario)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {scenario}.description: expected a string, got datetime.date(2024, 12, 31); quote it to make it one\n",
    )
