"""`knuma up`: the whole stack on one machine, in one process tree.

    knuma up (this process)         API server (in-process), node proxy `configz` of every node,
    │                               Deployment, ReplicaSet, DaemonSet and ResourceClaim controllers, live summary,
    │                               the simulated fabric driver's attach controller (`--fabric-gpus`)
    ├── python -m knuma.local.nodes every simulated node: kubelet model, heartbeats, PodResources, (NRT in-process)
    ├── knuma exporter x N          one per node, reading the node's sysfs tree and PodResources socket
    └── knuma scheduler             profiles topology-aware-scheduler and default-scheduler (topology-unaware)

Start order is the dependency order (API server, CRD, controllers, nodes, exporters, scheduler); stop order is the
reverse. A child that dies is started again with backoff (`supervisor`); one that keeps dying stops the whole
cluster with its log's last lines, rather than leaving half a cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import yaml

from knuma.api.crd import NRT_CRD
from knuma.deploy.check.processes import (
    LEASE_PATH,
    PAUSED,
    RENEW_SECONDS,
    RUNNING,
    STOPPED,
    LocalProcesses,
    Process,
)
from knuma.deploy.exporter import NAME as DEPLOYED_EXPORTER
from knuma.deploy.scheduler import NAME as DEPLOYED_SCHEDULER
from knuma.duration import format_duration
from knuma.kube import rest
from knuma.kube.client import async_http
from knuma.kube.errors import Conflict, KubeApiError, NotFound
from knuma.kube.informer import Callbacks, Informer
from knuma.local.apiserver.loader import Manifest, read_manifests
from knuma.local.apiserver.server import ApiServer, generate_token, persistent_token
from knuma.local.controllers import fabric_attach
from knuma.local.controllers.claims import ResourceClaimController
from knuma.local.controllers.device_taint_eviction import DeviceTaintEvictionController
from knuma.local.controllers.manager import WorkloadControllers
from knuma.local.nodes.heartbeats import HEARTBEAT_ANNOTATION, heartbeat_stopped
from knuma.local.nodes.kubeletconfig import configz_handler
from knuma.local.nodes.layout import NodeFiles
from knuma.local.nodes.spec import NodeSpec, nodes_of
from knuma.local.up.children import Child, stop_all
from knuma.local.up.lock import DataDirInUse, DataDirLock
from knuma.local.up.options import UpError, UpFailed, UpOptions, save_cluster
from knuma.local.up.summary import ClusterSummary, summarize
from knuma.local.up.supervisor import Supervisor
from knuma.scheduler.config.own_profile import knuma_profile
from knuma.testbed.cluster import ClusterSpec
from knuma.testbed.dra import device_classes

__all__ = ["AWARE_PROFILE", "UNAWARE_PROFILE", "LocalCluster", "scheduler_configuration"]

log = logging.getLogger("knuma.local.up")

AWARE_PROFILE = "topology-aware-scheduler"
UNAWARE_PROFILE = "default-scheduler"
EXPORTER_PROCESSES_UP_TO = 8
NRT_GR = ("topology.node.k8s.io", "noderesourcetopologies")


def scheduler_configuration() -> dict[str, Any]:
    """Two profiles: knuma's NUMA-aware one (`knuma_profile`: the default plugins and NodeResourceTopologyMatch, as
    `knuma scheduler` runs without a file), and `default-scheduler` without NodeResourceTopologyMatch (what a cluster's
    stock kube-scheduler does), so the same workload can be scheduled both ways."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [
            knuma_profile(AWARE_PROFILE),
            {
                "schedulerName": UNAWARE_PROFILE,
                "plugins": {"multiPoint": {"disabled": [{"name": "NodeResourceTopologyMatch"}]}},
            },
        ],
    }


def _process(child: Child, *nodes: str, silent: bool = False) -> Process:
    """A child as `knuma check` reads it; `silent`: it stands for an exporter on a node cut off from the API server."""
    code = child.exited()
    if code is not None:
        reason = f"it exited with code {code}; knuma up starts it again (it stops the cluster if it keeps failing)"
        return Process(STOPPED, child.pid, str(child.log_file), nodes, reason)
    if silent:
        node = nodes[0]
        reason = (
            f"the simulated node {node} is silent (annotation {HEARTBEAT_ANNOTATION}=stopped): its exporter is cut "
            f"off with its kubelet; kubectl annotate node {node} {HEARTBEAT_ANNOTATION}- brings both back"
        )
        return Process(PAUSED, child.pid, str(child.log_file), nodes, reason)
    return Process(RUNNING, child.pid, str(child.log_file), nodes)


class _DeployedPodDeleted:
    """The pods of a deployed stack (`knuma deploy`'s scheduler Deployment and exporter DaemonSet) are simulated on
    `knuma up`: the simulated kubelet runs no containers. The work they stand for is done by `knuma up`'s own
    children: its `knuma scheduler` schedules the NUMA-aware profile's pods, and with `--exporters process` one `knuma
    exporter` per node publishes that node's NRT. So that deleting such a pod restarts a real process, as it does on a
    cluster (`knuma e2e`'s scheduler- and exporter-restart tests), its deletion stops the child standing for it (the
    scheduler, or the exporter of the pod's node), which the supervisor starts again."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def on_add(self, obj: dict[str, Any]) -> None:
        return None

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        return None

    def on_delete(self, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        role = (md.get("labels") or {}).get("app.kubernetes.io/name")
        if role == DEPLOYED_SCHEDULER:
            child, stands_for = self.cluster.scheduler, "knuma up's scheduler process"
        elif role == DEPLOYED_EXPORTER:
            node = (obj.get("spec") or {}).get("nodeName")
            child, stands_for = self.cluster.exporter_of(node), f"the exporter process of {node}"
        else:
            return
        if child is None or child.exited() is not None:
            return
        log.warning(
            "%s pod %s/%s deleted: restarting %s (pid %s), which works for it",
            "scheduler" if role == DEPLOYED_SCHEDULER else "exporter",
            md.get("namespace"),
            md.get("name"),
            stands_for,
            child.pid,
        )
        self.cluster.supervisor.restart(child)


class LocalCluster:
    def __init__(self, options: UpOptions, cluster: ClusterSpec, document: dict[str, Any]) -> None:
        self.options = options
        self.cluster = cluster
        self.document = document
        self.nodes: list[NodeSpec] = nodes_of(cluster)
        self.persistent = options.data_dir is not None
        self.work_dir = options.data_dir or Path(tempfile.mkdtemp(prefix="knuma-up-"))
        self.sockets_dir = Path(tempfile.mkdtemp(prefix="kup-"))  # short: unix socket paths are limited
        self.kubeconfig = options.kubeconfig_out or self.work_dir / "kubeconfig"
        self.logs = self.work_dir / "logs"
        mode = options.exporters
        if mode == "auto":
            mode = "process" if len(self.nodes) <= EXPORTER_PROCESSES_UP_TO else "in-process"
        if mode not in ("process", "in-process"):
            raise UpError(f"--exporters must be auto, process or in-process, got {options.exporters!r}")
        self.exporter_mode = mode
        self.server: ApiServer | None = None
        self.http: httpx2.AsyncClient | None = None
        self.controllers: WorkloadControllers | None = None
        self._controller_task: asyncio.Task[None] | None = None
        self.claim_controller: ResourceClaimController | None = None
        self._claim_controller_task: asyncio.Task[None] | None = None
        self.device_taint_eviction: DeviceTaintEvictionController | None = None
        self._device_taint_eviction_task: asyncio.Task[None] | None = None
        self.fabric: fabric_attach.FabricAttachController | None = None
        self._fabric_task: asyncio.Task[None] | None = None
        self.node_process: Child | None = None
        self.exporters: list[Child] = []
        self.scheduler: Child | None = None
        self._deployed_pods_task: asyncio.Task[None] | None = None
        self._silent_nodes_task: asyncio.Task[None] | None = None
        self._silent: set[str] = set()
        """Nodes annotated `sim.knuma.io/heartbeat=stopped`, as the Node informer last saw them."""
        self.supervisor = Supervisor()
        self.scheduler_profiles: list[str] = []
        self.scheduler_config = scheduler_configuration()
        """What the scheduler child runs (its `--config` file) and what the processes' record tells `knuma check`."""
        self.lock: DataDirLock | None = None
        self._processes_published = ""
        self._processes_renewed = 0.0

    # -- start -------------------------------------------------------------------------------------------------------

    async def start(self, progress: Callable[[str], None]) -> None:
        """Bring every part up; raises `DataDirInUse` before touching anything when another `knuma up` runs on the
        data directory."""
        if self.persistent:
            self.lock = DataDirLock.acquire(self.work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        cluster_file = save_cluster(self.work_dir, self.document)
        await self._start_apiserver()
        progress(f"API server listening on {self.url}")
        assert self.server is not None
        if self.lock is not None:
            self.lock.record(url=self.url)
        self.http = async_http(self.kubeconfig, timeout=30.0)
        await self._install_crd()
        classes = device_classes(pool.shape for pool in self.cluster.pools)
        if classes:  # one DeviceClass per simulated DRA driver, as a driver's Helm chart installs it
            self.server.load([Manifest("knuma up", obj) for obj in classes])
        if self.options.load:
            for loaded in self.server.load(read_manifests(self.options.load)):
                log.info("loaded %s: %s", loaded.manifest.describe, loaded.action)
        for node in self.nodes:
            self.server.register_node_proxy(node.name, configz_handler(node))
        self.controllers = WorkloadControllers(
            self.http,
            node_monitor_period=self.options.node_monitor_period,
            node_monitor_grace_period=self.options.node_monitor_grace_period,
            node_startup_grace_period=self.options.node_startup_grace_period,
            eviction_rates=self.options.eviction_rates,
        )
        self._controller_task = asyncio.create_task(self.controllers.run())
        self.claim_controller = ResourceClaimController(self.http)
        self._claim_controller_task = asyncio.create_task(self.claim_controller.run())
        self.device_taint_eviction = DeviceTaintEvictionController(self.http)
        self._device_taint_eviction_task = asyncio.create_task(self.device_taint_eviction.run())
        await self._start_fabric(progress)
        progress(f"starting {len(self.nodes)} simulated nodes")
        await self._start_nodes(cluster_file)
        if self.exporter_mode == "process":
            progress(f"starting {len(self.nodes)} exporters")
            self._start_exporters()
        if self.options.scheduler:
            self._start_scheduler()
        if self.scheduler is not None or self.exporters:
            pods = Informer(
                self.http,
                "/api/v1/pods",
                _DeployedPodDeleted(self),
                label_selector=f"app.kubernetes.io/name in ({DEPLOYED_SCHEDULER},{DEPLOYED_EXPORTER})",
                watch_timeout=60,
                on_error=log.debug,
            )
            self._deployed_pods_task = asyncio.create_task(pods.run())
        if self.exporters or self.exporter_mode == "in-process":  # silent nodes: exporters paused, or not publishing
            nodes = Informer(
                self.http,
                "/api/v1/nodes",
                Callbacks(self._node_seen, lambda _, new: self._node_seen(new), self._node_gone),
                watch_timeout=60,
                on_error=log.debug,
            )
            self._silent_nodes_task = asyncio.create_task(nodes.run())
        await self.publish_processes()

    async def _start_fabric(self, progress: Callable[[str], None]) -> None:
        """The simulated fabric driver (`--fabric-gpus`): its ResourceSlice and DeviceClass, and its fabric manager
        attaching what the scheduler allocates. Without the flag, what an earlier run on the data directory left of
        it goes."""
        assert self.http is not None
        if not self.options.fabric_gpus:
            if self.persistent:
                await fabric_attach.withdraw(self.http)
            return
        self.fabric = fabric_attach.FabricAttachController(
            self.http, self.options.fabric_gpus, self.options.fabric_attach_delay
        )
        try:
            await self.fabric.publish()
        except KubeApiError as err:
            raise UpFailed(f"cannot publish the fabric driver's ResourceSlice: {err}") from err
        count = self.options.fabric_gpus
        progress(f"fabric driver: {count} GPU{'s' if count != 1 else ''} published")
        self._fabric_task = asyncio.create_task(self.fabric.run())

    def _node_seen(self, node: dict[str, Any]) -> None:
        name = str((node.get("metadata") or {}).get("name") or "")
        if heartbeat_stopped(node):
            self._silent.add(name)
        else:
            self._silent.discard(name)
        self.pause_silent_exporters()

    def _node_gone(self, node: dict[str, Any]) -> None:
        self._silent.discard(str((node.get("metadata") or {}).get("name") or ""))
        self.pause_silent_exporters()

    def pause_silent_exporters(self) -> None:
        """The exporter process of a node annotated `sim.knuma.io/heartbeat=stopped` is paused (SIGSTOP) while the
        annotation lasts: on a cluster the exporter is a pod on that node, cut off from the API server with its
        kubelet, so the NRT the scheduler sees stays what it was when the node went silent. Run on every Node event
        and after the supervisor restarted children (a restarted exporter of a silent node is paused again)."""
        for node in self.nodes:
            child = self.exporter_of(node.name)
            if child is None:
                continue
            name, silent = node.name, node.name in self._silent
            if silent and not child.paused and child.exited() is None:
                log.info("node %s is silent: its exporter (pid %s) is paused until it is back", name, child.pid)
                child.pause()
            elif not silent and child.paused:
                log.info("node %s is back (or gone): its exporter (pid %s) resumes", name, child.pid)
                child.resume()

    @property
    def url(self) -> str:
        return self.server.url if self.server is not None else ""

    async def _start_apiserver(self) -> None:
        data_dir = self.work_dir / "apiserver" if self.persistent else None
        token = persistent_token(data_dir) if data_dir is not None else generate_token()
        self.server = ApiServer(token=token, data_dir=data_dir)
        port_file = self.work_dir / "port"
        port = self.options.port
        if port is None and self.persistent and port_file.is_file():
            with contextlib.suppress(ValueError):
                port = int(port_file.read_text().strip())  # keep the kubeconfig of the last run valid
        try:
            await self.server.start("127.0.0.1", port or 0)
        except OSError as err:
            if self.options.port is not None:
                reason = os.strerror(err.errno).lower() if err.errno else str(err)  # asyncio repeats the address
                raise UpFailed(f"cannot listen on 127.0.0.1:{port}: {reason}") from None
            await self.server.start("127.0.0.1", 0)
        if self.persistent:
            port_file.write_text(f"{self.server.port}\n")
        self.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
        self.server.write_kubeconfig(self.kubeconfig)

    async def _install_crd(self) -> None:
        assert self.http is not None
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        try:
            await rest.post(self.http, path, NRT_CRD)
        except Conflict:
            pass  # installed by an earlier run
        except KubeApiError as err:
            raise UpFailed(f"cannot install the NodeResourceTopology CRD: {err}") from err

    async def _start_nodes(self, cluster_file: Path) -> None:
        ready = self.work_dir / "run" / "nodes.ready"
        ready.parent.mkdir(parents=True, exist_ok=True)
        ready.unlink(missing_ok=True)
        args = [
            sys.executable,
            "-m",
            "knuma.local.nodes",
            "--kubeconfig",
            str(self.kubeconfig),
            "--cluster",
            str(cluster_file),
            "--state-dir",
            str(self.work_dir),
            "--nrt",
            "external" if self.exporter_mode == "process" else "in-process",
            "--lease-renew-interval",
            str(self.options.lease_renew_interval),
            "--ready-file",
            str(ready),
        ]
        if self.exporter_mode == "process":
            args += ["--sockets-dir", str(self.sockets_dir)]
        if self.options.nrt_period is not None:
            args += ["--nrt-period", str(self.options.nrt_period)]
        self.node_process = Child("simulated nodes", args, self.logs / "nodes.log").start()
        timeout = 60.0 + len(self.nodes) * 0.1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not ready.exists():
            code = self.node_process.exited()
            if code is not None:
                raise UpFailed(f"the simulated nodes exited with {code}:\n{self.node_process.tail()}")
            if loop.time() > deadline:
                raise UpFailed(
                    f"the simulated nodes were not ready within {timeout:.0f}s; see {self.logs / 'nodes.log'}"
                )
            await asyncio.sleep(0.05)

    def _start_exporters(self) -> None:
        for node in self.nodes:
            files = NodeFiles.of(self.work_dir, self.sockets_dir, node.name)
            args = [
                sys.executable,
                "-m",
                "knuma",
                "exporter",
                "--node-name",
                node.name,
                "--sysfs-root",
                str(files.sysfs),
                "--podresources-socket",
                files.podresources_address,
                "--kubelet-config-file",
                str(files.kubelet_config),
                *self._exporter_triggers(files),
                # as a DaemonSet would run it where kubelets may be older than 1.34 (whose PodResources List has
                # terminated pods, kubernetes#119423); the simulated kubelets list only active pods, as 1.34 does
                "--exclude-terminal-pods",
                "--kubeconfig",
                str(self.kubeconfig),
                "--metrics-port",
                "0",
            ]
            if node.shape.dra:
                args.append("--dra-devices")  # knuma's NRT extension: DRA devices per NUMA zone
            log_file = self.logs / f"exporter-{node.name}.log"
            # paused while its node is silent: a SIGTERM from a dying `knuma up` would wait for ever, SIGKILL does not
            exporter = Child(f"exporter {node.name}", args, log_file, death_signal=signal.SIGKILL)
            self.exporters.append(exporter.start())

    def exporter_of(self, node: str | None) -> Child | None:
        """The exporter process publishing `node`'s NRT (none with `--exporters in-process`)."""
        return next((c for c in self.exporters if c.name == f"exporter {node}"), None)

    def _exporter_triggers(self, files: NodeFiles) -> list[str]:
        """On every change (the node process touches the notify file), or only periodically (`--nrt-period`)."""
        if self.options.nrt_period is None:
            return ["--notify-file", str(files.notify)]
        return ["--sleep-interval", format_duration(self.options.nrt_period)]

    def _start_scheduler(self) -> None:
        args = [
            sys.executable,
            "-m",
            "knuma",
            "scheduler",
            "--kubeconfig",
            str(self.kubeconfig),
            "--no-leader-elect",
            "--metrics-port",
            "0",
            "--secure-port",
            "0",
        ]
        config = self.work_dir / "scheduler-config.yaml"
        config.write_text(yaml.safe_dump(self.scheduler_config, sort_keys=False))
        args += ["--config", str(config)]
        self.scheduler_profiles = [AWARE_PROFILE, UNAWARE_PROFILE]
        self.scheduler = Child("scheduler", args, self.logs / "scheduler.log").start()

    # -- running -----------------------------------------------------------------------------------------------------

    def processes(self) -> LocalProcesses:
        """What runs as processes here in place of the stack's pods, for `knuma check` to find
        (`knuma.deploy.check.processes`)."""
        exporters: list[Process] = []
        if self.exporter_mode == "process":
            for node in self.nodes:
                child = self.exporter_of(node.name)
                if child is not None:
                    exporters.append(_process(child, node.name, silent=child.paused))
        elif self.node_process is not None:  # the nodes' process publishes every NRT but a silent node's
            publishing = tuple(n.name for n in self.nodes if n.name not in self._silent)
            if publishing:
                exporters.append(_process(self.node_process, *publishing))
            silent = [n.name for n in self.nodes if n.name in self._silent]
            exporters += [_process(self.node_process, name, silent=True) for name in silent]
        scheduler = _process(self.scheduler) if self.scheduler is not None else None
        return LocalProcesses(
            f"knuma-up@{socket.gethostname()}/{os.getpid()}",
            tuple(exporters),
            scheduler,
            self.scheduler_config if scheduler is not None else None,
        )

    async def publish_processes(self) -> None:
        """Write `processes()` to its Lease when it changed, and renew it every `RENEW_SECONDS` otherwise. A failed
        write is retried on the next call (the run loop's next second)."""
        assert self.http is not None
        record = self.processes()
        annotation = record.annotation()
        now = asyncio.get_running_loop().time()
        if annotation == self._processes_published and now - self._processes_renewed < RENEW_SECONDS:
            return
        lease = record.lease(dt.datetime.now(dt.UTC))
        try:
            try:
                await rest.patch(self.http, LEASE_PATH, {"metadata": lease["metadata"], "spec": lease["spec"]})
            except NotFound:
                await rest.post(self.http, LEASE_PATH.rsplit("/", 1)[0], lease)
        except KubeApiError as err:
            log.debug("cannot record the processes for knuma check: %s", err)
            return
        self._processes_published, self._processes_renewed = annotation, now

    def children(self) -> list[Child]:
        return [c for c in (self.scheduler, *self.exporters, self.node_process) if c is not None]

    def failed_child(self) -> Child | None:
        """Restart children that died (with backoff); the one that keeps dying, if any."""
        failed = self.supervisor.check(self.children())
        self.pause_silent_exporters()
        return failed

    def summary(self) -> ClusterSummary:
        assert self.server is not None
        store = self.server.store
        return summarize(
            store.scan(("", "nodes")), store.scan(("", "pods")), store.scan(NRT_GR), restarts=self.supervisor.restarts
        )

    # -- stop --------------------------------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop everything in reverse order and remove sockets and temporary files."""
        if self._silent_nodes_task is not None:  # no pause may come between an exporter's SIGTERM and its exit
            self._silent_nodes_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._silent_nodes_task
            self._silent_nodes_task = None
        first = [c for c in (self.scheduler, *self.exporters) if c is not None]
        await asyncio.to_thread(stop_all, first)
        if self.node_process is not None:
            await asyncio.to_thread(self.node_process.stop, 15.0)
        for task in (
            self._deployed_pods_task,
            self._silent_nodes_task,
            self._controller_task,
            self._claim_controller_task,
            self._device_taint_eviction_task,
            self._fabric_task,
        ):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.http is not None:
            if self._processes_published:  # none of them runs any more; a resumed cluster records its own
                with contextlib.suppress(KubeApiError):
                    await rest.delete(self.http, LEASE_PATH)
            await self.http.aclose()
        if self.server is not None:
            await self.server.stop()
        shutil.rmtree(self.sockets_dir, ignore_errors=True)
        if not self.persistent:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        if self.lock is not None:
            self.lock.release()
            self.lock = None


async def run(
    options: UpOptions,
    cluster: ClusterSpec,
    document: dict[str, Any],
    *,
    announce: Callable[[LocalCluster], None],
    progress: Callable[[str], None],
    show: Callable[[ClusterSummary], None],
    refresh: float = 1.0,
) -> int:
    """Bring the cluster up, call `show` with a summary every `refresh` seconds until SIGINT/SIGTERM, stop it.
    Returns the exit code: 0 after a requested stop, 1 when a part of the cluster failed."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    local = LocalCluster(options, cluster, document)
    try:
        await local.start(progress)
    except DataDirInUse:
        await local.stop()  # nothing was started; only the temporary sockets directory goes
        raise
    except BaseException:
        progress("start failed; stopping what was started")
        await local.stop()
        raise
    code = 0
    try:
        announce(local)
        while not stop.is_set():
            failed = local.failed_child()
            if failed is not None:
                log.error(
                    "%s keeps failing (last exit code %s); stopping the cluster. Last lines of %s:\n%s",
                    failed.name,
                    failed.exited(),
                    failed.log_file,
                    failed.tail(),
                )
                code = 1
                break
            await local.publish_processes()
            show(local.summary())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), refresh)
    finally:
        progress("stopping")
        await local.stop()
        if local.persistent:
            progress(f"stopped; `knuma up --data-dir {local.work_dir}` resumes this cluster")
        else:
            progress("stopped")
    return code
