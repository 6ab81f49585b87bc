"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules.

- A candidate takes the Lease when it does not exist, has no holder, or its holder has not renewed it for
  `leaseDurationSeconds` — measured on the candidate's own clock from when it last saw the record change, never by
  comparing timestamps written by another machine (clock skew cannot hand out two leaderships).
- Every write carries the `resourceVersion` it read, so two candidates racing for an expired Lease cannot both win:
  the loser gets 409 Conflict.
- The leader renews every `retry_period`; if it cannot renew for `renew_deadline` it steps down (`lost` is set) and
  stops working, before any other candidate can consider the Lease expired (`renew_deadline < lease_duration`).
- Before every action that only the leader may take (a scheduling cycle, a bind), `still_leading()` checks the renew
  deadline on the local clock: a process paused past its deadline (SIGSTOP, a long GC pause, a frozen VM) must not
  act on its stale queue when it resumes, even before its renew loop has run and noticed. client-go's elector cancels
  the leader's context when `RenewDeadline` passes without a renewal (`renew` in leaderelection.go); this is that
  check, made synchronously where the action happens.
- `release()` at graceful shutdown empties the holder, so a standby takes over at once instead of waiting out the
  lease.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2

from knuma.errors import InvalidInput
from knuma.kube import rest
from knuma.kube.errors import Conflict, KubeApiError, NotFound

__all__ = ["LeaderElector", "LeaseConfig"]

log = logging.getLogger("knuma.kube.leaderelection")


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str = "kube-system"
    name: str = "topology-aware-scheduler"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise InvalidInput(
                "leader election needs 0 < retryPeriod < renewDeadline < leaseDuration, got "
                f"{self.retry_period}s, {self.renew_deadline}s, {self.lease_duration}s"
            )


class LeaderElector:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        identity: str,
        config: LeaseConfig = LeaseConfig(),
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.identity = identity
        self.config = config
        self.clock = clock
        self.is_leader = False
        self.lost = asyncio.Event()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.config.namespace}/leases/{self.config.name}"

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        logged = False
        while not await self.try_acquire_or_renew():
            if not logged:
                holder = (self._observed or {}).get("holderIdentity") or "?"
                log.info("waiting for lease %s/%s held by %s", self.config.namespace, self.config.name, holder)
                logged = True
            await asyncio.sleep(self.config.retry_period)
        log.info("acquired lease %s/%s as %s", self.config.namespace, self.config.name, self.identity)

    async def renew_forever(self) -> None:
        """Renew until cancelled; on a renewal deadline miss, step down and set `lost`."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            ok = await self.try_acquire_or_renew()
            if not ok and self.clock() - self._last_renew >= self.config.renew_deadline:
                self.is_leader = False
                log.error("failed to renew lease %s/%s in time; stepping down", self.config.namespace, self.config.name)
                self.lost.set()
                return

    def still_leading(self) -> bool:
        """True while this candidate holds the Lease and renewed it within `renew_deadline`; otherwise step down
        (set `lost`) and return False."""
        if not self.is_leader:
            return False
        if self.clock() - self._last_renew < self.config.renew_deadline:
            return True
        self.is_leader = False
        log.error(
            "lease %s/%s not renewed for %.1fs (renew deadline %.1fs): stepping down before acting",
            self.config.namespace,
            self.config.name,
            self.clock() - self._last_renew,
            self.config.renew_deadline,
        )
        self.lost.set()
        return False

    async def release(self) -> None:
        if not self.is_leader:
            return
        self.is_leader = False
        try:
            lease = await rest.get(self.http, self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            now = _micro_time()
            lease["spec"] = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now}
            await rest.put(self.http, self.path, lease)
            log.info("released lease %s/%s", self.config.namespace, self.config.name)
        except NotFound:
            return  # nothing to release
        except KubeApiError as err:
            log.warning("could not release lease: %s", err)

    async def try_acquire_or_renew(self) -> bool:
        try:
            return await self._try()
        except KubeApiError as err:
            log.warning("lease %s/%s: %s", self.config.namespace, self.config.name, err)
            return False

    async def _try(self) -> bool:
        now_text = _micro_time()
        try:
            lease = await rest.get(self.http, self.path)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(now_text, acquire_time=now_text, transitions=0),
            }
            return await self._write("POST", self.path.rsplit("/", 1)[0], body)
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = dict(spec), self.clock()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        held_by_other = holder and holder != self.identity
        if held_by_other and self.clock() < self._observed_at + duration:
            self.is_leader = False
            return False
        if holder == self.identity:
            acquire_time = spec.get("acquireTime") or now_text
            transitions = int(spec.get("leaseTransitions") or 0)
        else:
            acquire_time, transitions = now_text, int(spec.get("leaseTransitions") or 0) + 1
        lease["spec"] = self._spec(now_text, acquire_time=acquire_time, transitions=transitions)
        return await self._write("PUT", self.path, lease)

    def _spec(self, now: str, *, acquire_time: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),
            "acquireTime": acquire_time,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def _write(self, method: str, path: str, lease: dict[str, Any]) -> bool:
        """Create or update the Lease; False when another candidate wrote first (409 Conflict)."""
        try:
            written = await rest.request(self.http, method, path, body=lease)
        except Conflict:
            return False
        spec = written.get("spec") or {}
        self._observed, self._observed_at = dict(spec), self.clock()
        self._last_renew = self.clock()
        self.is_leader = True
        return True


def _micro_time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
