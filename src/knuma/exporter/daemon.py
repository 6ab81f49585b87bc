"""The exporter daemon: triggers -> kubelet scan -> build -> publish, plus /metrics, /healthz and /readyz.

A thin loop around the pure builder. The machine topology is read from sysfs once at start (CPU hot-plug does not
happen on Kubernetes nodes in practice; a restart picks it up). Allocatable and allocations are read from the kubelet
on every update. A failed scan or publish is retried with exponential backoff (0.5 s doubling to 30 s) on top of the
regular triggers; `/readyz` turns ready after the first successful publish and unready while the kubelet or the API
server cannot be reached, saying which.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lightkube import AsyncClient

from knuma.exporter.builder import BuildOptions, KubeletState, build
from knuma.exporter.fingerprint import status_document, write_status
from knuma.exporter.http import Response, SimpleHTTPServer
from knuma.exporter.metrics import ExporterMetrics
from knuma.exporter.podresources.client import PodResourcesClient, PodResourcesError
from knuma.exporter.publisher import Outcome, Publisher, PublishError
from knuma.exporter.scan import scan
from knuma.exporter.settings import ExporterSettings, build_options
from knuma.exporter.sysfs import MachineTopology, SysfsError, discover
from knuma.exporter.tmconfig import ConfigError
from knuma.exporter.triggers import KUBELET_STATE_FILES, Trigger, UpdateQueue, prepare_notify_file, tick, watch_files
from knuma.kube.client import async_client

__all__ = ["Exporter", "Health", "make_client", "run"]

log = logging.getLogger("knuma.exporter")

FIELD_MANAGER = "knuma-exporter"
BACKOFF_START = 0.5
BACKOFF_MAX = 30.0


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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.machine = machine
        self.options = options
        self.metrics = ExporterMetrics(settings.node_name)
        self.health = Health()
        self.publisher = Publisher(client, settings.node_name, add_owner_reference=settings.add_owner_reference)
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

    async def update(self, triggers: frozenset[Trigger]) -> Outcome | None:
        """One scan + build + publish; returns the outcome, or None when it failed (and a retry is scheduled)."""
        trigger = "periodic" if triggers == {Trigger.PERIODIC} else "reactive"
        started = time.perf_counter()
        try:
            state: KubeletState = await asyncio.to_thread(scan, self.podresources)
        except PodResourcesError as err:
            self.health.kubelet_error = str(err)
            log.warning("scan failed: %s", err)
            self._schedule_retry()
            return None
        self.health.kubelet_error = ""
        result = build(self.machine, state, self.options)
        for warning in result.warnings:
            log.warning("%s", warning)
        self._dump_fingerprint(result.nrt.fingerprint, result.fingerprinted)
        try:
            outcome = await self.publisher.publish(result.nrt)
        except PublishError as err:
            self.health.publish_error = str(err)
            self.metrics.publish_errors.labels(self.settings.node_name).inc()
            log.warning("publish failed: %s", err)
            self._schedule_retry()
            return None
        self.health.publish_error = ""
        self.health.published = True
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
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self.close()
            if http is not None:
                await http.stop()
            log.info("exporter stopped")

    async def _start_http(self) -> SimpleHTTPServer | None:
        if self.settings.metrics_port is None:
            return None
        server = SimpleHTTPServer({"/metrics": self._metrics, "/healthz": self._healthz, "/readyz": self._readyz})
        self.http_port = await server.start(self.settings.metrics_address, self.settings.metrics_port)
        log.info("serving /metrics, /healthz, /readyz on %s:%s", self.settings.metrics_address, self.http_port)
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
        exporter.close()
        await client.close()


def run(settings: ExporterSettings, *, once: bool = False) -> int:
    """Run the exporter until SIGTERM/SIGINT (or one update with `once`); the process exit code."""
    return asyncio.run(_main(settings, once))
