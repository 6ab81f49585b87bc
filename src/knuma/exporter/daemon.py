"""The exporter daemon: triggers -> kubelet scan -> build -> publish, plus /metrics, /healthz and /readyz.

A thin loop around the pure builder. The machine topology is read from sysfs once at start (CPU hot-plug does not
happen on Kubernetes nodes in practice; a restart picks it up). Allocatable and allocations are read from the kubelet
on every update. The kubelet config file and the exporter's config file are re-read when they change, so a new
Topology Manager policy or scope is republished without a restart (an unreadable new version is logged and the
previous settings stay). With `exclude_terminal_pods`, a node-scoped pod informer tells which listed pods are
terminal (`podphases`). A failed scan or publish is retried with exponential backoff (0.5 s doubling to 30 s) on top
of the regular triggers; `/readyz` turns ready after the first successful publish and unready while the kubelet or
the API server cannot be reached, saying which.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx2
from lightkube import AsyncClient

from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.metrics import ExporterMetrics
from knuma.exporter.objectwatch import watch_for_deletion
from knuma.exporter.podphases import PodPhases, drop_terminal, terminal_names
from knuma.exporter.podset import status_document, write_status
from knuma.exporter.publisher import Outcome, Publisher, PublishError
from knuma.exporter.scan import scan
from knuma.exporter.settings import ExporterSettings, build_options, config_files, options_from
from knuma.exporter.sysfs import MachineTopology, SysfsError, discover
from knuma.exporter.tmconfig import ConfigError, load_config_file, load_kubelet_config
from knuma.exporter.triggers import KUBELET_STATE_FILES, Trigger, UpdateQueue, prepare_notify_file, tick, watch_files
from knuma.kube.client import async_client, async_http
from knuma.kube.tasks import cancel_and_wait
from knuma.podresources.client import PodResourcesClient, PodResourcesError
from knuma.serving.http import Response, SimpleHTTPServer

if TYPE_CHECKING:  # `--dra-devices` only: the DRA API and allocator modules stay out of a plain exporter
    from knuma.exporter.drawatch import DraSources

__all__ = ["Exporter", "Health", "make_client", "run"]

log = logging.getLogger("knuma.exporter")

FIELD_MANAGER = "knuma-exporter"
BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
SYNC_WAIT = 10.0
"""How long an update waits for the pod informer's first list before counting every listed pod."""
ACTIVE_PODS_KUBELET = (1, 34)
"""From this kubelet version `List` returns active pods only (KubeletPodResourcesListUseActivePods on by default)."""


@dataclass
class Health:
    published: bool = False
    kubelet_error: str = ""
    publish_error: str = ""

    @property
    def ready(self) -> bool:
        return self.published and not self.kubelet_error and not self.publish_error

    def reason(self) -> str:
        if self.kubelet_error:
            return f"kubelet: {self.kubelet_error}"
        if self.publish_error:
            return f"api server: {self.publish_error}"
        return "ok" if self.published else "no NodeResourceTopology published yet"


def make_client(settings: ExporterSettings) -> AsyncClient:
    """A lightkube client from --kubeconfig/--context, else in-cluster, else ~/.kube/config."""
    return async_client(settings.kubeconfig, settings.context, field_manager=FIELD_MANAGER)


class Exporter:
    def __init__(
        self,
        settings: ExporterSettings,
        *,
        machine: MachineTopology,
        options: BuildOptions,
        client: AsyncClient,
        http: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`http` (a raw client, see `knuma.kube.client.async_http`) serves the pod informer of
        `exclude_terminal_pods`; one is made from the settings when needed and not given. `options` are the
        settings at start (`build_options`); `env` is what they were resolved with when re-reading (os.environ)."""
        self.settings = settings
        self.machine = machine
        self.options = options
        self.metrics = ExporterMetrics(settings.node_name)
        self.health = Health()
        self.publisher = Publisher(
            client,
            settings.node_name,
            add_owner_reference=settings.add_owner_reference,
            resync_every=settings.patch_resync,
        )
        self.queue = UpdateQueue(settings.min_update_interval)
        self.podresources = PodResourcesClient(
            settings.podresources_socket, timeout=settings.podresources_timeout, observer=self.metrics.observe_call
        )
        self.http_port: int | None = None
        self.updates = 0
        self.last_triggers: frozenset[Trigger] = frozenset()
        """What caused the last successful update."""
        self._clock = clock
        self._failures = 0
        self._retry: asyncio.TimerHandle | None = None
        self.pod_phases: PodPhases | None = None
        self._own_http: httpx2.AsyncClient | None = None
        self._phases_task: asyncio.Task[None] | None = None
        if settings.exclude_terminal_pods:
            if http is None:
                http = self._own_http = async_http(settings.kubeconfig, settings.context)
            self.pod_phases = PodPhases(http, settings.node_name, lambda: self.queue.notify(Trigger.REACTIVE))
        self.dra: DraSources | None = None
        self._dra_tasks: list[asyncio.Task[None]] = []
        if settings.dra_devices:
            from knuma.exporter.drawatch import DraSources

            if http is None:
                http = self._own_http = async_http(settings.kubeconfig, settings.context)
            self.dra = DraSources(http, settings.node_name, lambda: self.queue.notify(Trigger.REACTIVE))
        self._version_checked = False
        self._env = env
        # the last usable version of each configuration file, kept when a new version cannot be read
        self._config = load_config_file(settings.config_file) if settings.config_file else None
        self._kubelet_config = (
            load_kubelet_config(settings.kubelet_config_file) if settings.kubelet_config_file else None
        )

    async def update(self, triggers: frozenset[Trigger]) -> Outcome | None:
        """One scan + build + publish; returns the outcome, or None when it failed (and a retry is scheduled)."""
        trigger = "periodic" if triggers == {Trigger.PERIODIC} else "reactive"
        started = time.perf_counter()
        if Trigger.CONFIG in triggers:
            self.reload_options()
        terminal = await self._terminal_pods()
        try:
            state: KubeletState = await asyncio.to_thread(scan, self.podresources)
        except PodResourcesError as err:
            self.health.kubelet_error = str(err)
            log.warning("scan failed: %s", err)
            self._schedule_retry()
            return None
        self.health.kubelet_error = ""
        if terminal:
            listed = len(state.pods)
            state = KubeletState(state.allocatable, drop_terminal(state.pods, terminal))
            if len(state.pods) != listed:
                log.debug("not counting %d terminal pods listed by the kubelet", listed - len(state.pods))
        result = build(self.machine, state, self.options)
        if self.dra is not None:
            if not self._dra_tasks:
                self._dra_tasks = [asyncio.create_task(i.run(), name="DRA informer") for i in self.dra.informers]
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in self.dra.informers)), SYNC_WAIT)
            result = replace(result, nrt=self.dra.annotate(result.nrt))
        for warning in result.warnings:
            log.warning("%s", warning)
        self._dump_fingerprint(result.nrt.fingerprint, result.fingerprinted)
        try:
            if self.settings.no_publish:
                outcome = Outcome.NOT_PUBLISHED
            else:
                outcome = await self.publisher.publish(result.nrt)
        except PublishError as err:
            self.health.publish_error = str(err)
            self.metrics.publish_errors.labels(self.settings.node_name).inc()
            log.warning("publish failed: %s", err)
            self._schedule_retry()
            return None
        self.health.publish_error = ""
        self.health.published = True
        self._check_kubelet_version()
        self._failures = 0
        self.updates += 1
        self.last_triggers = triggers
        elapsed = time.perf_counter() - started
        self.metrics.updates.labels(self.settings.node_name, outcome.value, trigger).inc()
        self.metrics.update_duration.labels(self.settings.node_name).observe(elapsed)
        self.metrics.last_success.labels(self.settings.node_name).set(self._clock())
        log.info(
            "NodeResourceTopology %s: %s (%s, %d pods fingerprinted, %.1f ms)",
            self.settings.node_name,
            outcome.value,
            ",".join(sorted(triggers)),
            result.pods,
            elapsed * 1000,
        )
        return outcome

    def reload_options(self) -> bool:
        """Re-read the configuration files; True when the settings changed. A file that cannot be used now is
        logged and its previous version stays (a half-written ConfigMap update must not stop the node agent); the
        other file still takes effect."""
        settings = self.settings
        if settings.config_file:
            try:
                self._config = load_config_file(settings.config_file)
            except ConfigError as err:
                log.error("configuration changed but cannot be used, keeping its previous version: %s", err)
            else:
                for warning in self._config.warnings:
                    log.warning("%s", warning)
        if settings.kubelet_config_file:
            try:
                self._kubelet_config = load_kubelet_config(settings.kubelet_config_file)
            except ConfigError as err:
                log.error("kubelet configuration changed but cannot be used, keeping its previous version: %s", err)
        options = options_from(settings, self._config, self._kubelet_config, self._env)
        if options == self.options:
            return False
        before, after = self.options.topology_manager, options.topology_manager
        log.info(
            "configuration re-read: topology manager %s/%s -> %s/%s",
            before.policy.value,
            before.scope.value,
            after.policy.value,
            after.scope.value,
        )
        self.options = options
        return True

    async def _terminal_pods(self) -> frozenset[tuple[str, str]]:
        """The node's terminal pods per the pod informer (started on first use), empty without the filter."""
        phases = self.pod_phases
        if phases is None:
            return frozenset()
        if self._phases_task is None:
            self._phases_task = asyncio.create_task(phases.run(), name="pod informer")
        if not phases.synced.is_set():
            try:
                await asyncio.wait_for(phases.synced.wait(), SYNC_WAIT)
            except TimeoutError:
                log.warning(
                    "pods of node %s not listed yet (see the informer's errors: RBAC needs list and watch on pods); "
                    "counting every pod the kubelet lists",
                    self.settings.node_name,
                )
                return frozenset()
        terminal = phases.terminal()
        if terminal:
            log.debug("terminal pods on %s: %s", self.settings.node_name, terminal_names(terminal))
        return terminal

    def _check_kubelet_version(self) -> None:
        """Once: warn when the kubelet lists terminated pods and the filter is off."""
        if self._version_checked or self.pod_phases is not None:
            return
        self._version_checked = True
        version = self.publisher.kubelet_version
        parsed = _version(version) if version else None
        if parsed is not None and parsed < ACTIVE_PODS_KUBELET:
            log.warning(
                "kubelet %s lists terminated pods in PodResources List (kubernetes#119423), so their exclusive "
                "resources look taken: run with --exclude-terminal-pods",
                version,
            )

    def _dump_fingerprint(self, computed: str, pods: tuple[tuple[str, str], ...]) -> None:
        path = self.settings.pods_fingerprint_status_file
        if not path or not computed:
            return
        try:
            write_status(path, status_document(self.settings.node_name, computed, pods))
        except OSError as err:
            log.warning("cannot write the fingerprint status file %s: %s", path, err)

    def close(self) -> None:
        """Cancel a pending retry and close the kubelet connection."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        self.podresources.close()

    async def aclose(self) -> None:
        """`close`, and stop the pod informer (and its HTTP client, when the exporter made it)."""
        self.close()
        informers = [t for t in (self._phases_task, *self._dra_tasks) if t is not None]
        with contextlib.suppress(Exception):  # closing goes on whatever an informer ended with
            await cancel_and_wait(informers)
        self._phases_task, self._dra_tasks = None, []
        if self._own_http is not None:
            await self._own_http.aclose()
            self._own_http = None

    def _object_gone(self, _name: str | None) -> None:
        self.publisher.forget()
        self.queue.notify(Trigger.DELETED)

    def _schedule_retry(self) -> None:
        delay = min(BACKOFF_MAX, BACKOFF_START * 2**self._failures)
        self._failures += 1
        if self._retry is not None:
            self._retry.cancel()
        self._retry = asyncio.get_running_loop().call_later(delay, self.queue.notify, Trigger.RETRY)

    async def serve(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set: triggers, updates and the HTTP endpoints."""
        http = await self._start_http()
        tasks = [asyncio.create_task(tick(self.queue, self.settings.sleep_interval), name="periodic")]
        watched = []
        if self.settings.notify_file:
            watched.append(prepare_notify_file(self.settings.notify_file))
        if self.settings.kubelet_state_dir:
            watched += [Path(self.settings.kubelet_state_dir) / name for name in KUBELET_STATE_FILES]
        if watched:
            tasks.append(asyncio.create_task(watch_files(self.queue, watched), name="watch"))
        configs = [Path(path) for path in config_files(self.settings)]
        if configs:
            tasks.append(
                asyncio.create_task(watch_files(self.queue, configs, trigger=Trigger.CONFIG), name="watch config")
            )
        tasks.append(
            asyncio.create_task(
                watch_for_deletion(
                    self.publisher.client,
                    self._object_gone,
                    names=[self.settings.node_name],
                    field_name=self.settings.node_name,
                ),
                name="watch own object",
            )
        )
        self.queue.notify(Trigger.INITIAL)
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                waiting = asyncio.create_task(self.queue.next())
                await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():
                    waiting.cancel()
                    break
                try:
                    await self.update(waiting.result())
                except Exception:  # a bug must not kill the node agent: log it, retry with backoff
                    log.exception("update failed unexpectedly")
                    self._schedule_retry()
        finally:
            stopping.cancel()
            await cancel_and_wait(tasks)
            await self.aclose()
            if http is not None:
                await http.stop()
            log.info("exporter stopped")

    async def _start_http(self) -> SimpleHTTPServer | None:
        if self.settings.metrics_port is None:
            return None
        tls = self.settings.metrics_tls
        server = SimpleHTTPServer(
            {"/metrics": self._metrics, "/healthz": self._healthz, "/readyz": self._readyz},
            tls=tls.context if tls is not None else None,
        )
        self.http_port = await server.start(self.settings.metrics_address, self.settings.metrics_port)
        log.info(
            "serving /metrics, /healthz, /readyz on %s://%s:%s",
            "https" if tls is not None else "http",
            self.settings.metrics_address,
            self.http_port,
        )
        return server

    def _metrics(self) -> Response:
        return 200, "text/plain; version=0.0.4; charset=utf-8", self.metrics.exposition()

    def _healthz(self) -> Response:
        return 200, "text/plain; charset=utf-8", b"ok\n"

    def _readyz(self) -> Response:
        return 200 if self.health.ready else 503, "text/plain; charset=utf-8", (self.health.reason() + "\n").encode()


async def _main(settings: ExporterSettings, once: bool) -> int:
    try:
        options = build_options(settings)
        machine = discover(settings.sysfs_root)
    except (SysfsError, ConfigError) as err:
        log.error("%s", err)
        return 2
    tm = options.topology_manager
    log.info(
        "node %s: %d NUMA nodes %s, topology manager %s/%s (from %s)",
        settings.node_name,
        len(machine.nodes),
        list(machine.numa_ids),
        tm.policy.value,
        tm.scope.value,
        ", ".join(f"{k}: {v}" for k, v in sorted(tm.sources.items())),
    )
    client = make_client(settings)
    exporter = Exporter(settings, machine=machine, options=options, client=client)
    try:
        if once:
            outcome = await exporter.update(frozenset({Trigger.INITIAL}))
            return 0 if outcome is not None else 1
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await exporter.serve(stop)
        return 0
    finally:
        await exporter.aclose()
        await client.close()


def run(settings: ExporterSettings, *, once: bool = False) -> int:
    """Run the exporter until SIGTERM/SIGINT (or one update with `once`); the process exit code."""
    return asyncio.run(_main(settings, once))


def _version(text: str) -> tuple[int, int] | None:
    """`v1.33.2` (or `v1.33.2-eks-abc`) -> (1, 33); None when unreadable."""
    parts = text.lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1].split("-")[0].split("+")[0])
    except (IndexError, ValueError):
        return None
