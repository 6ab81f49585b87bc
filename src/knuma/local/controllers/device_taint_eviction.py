"""The device taint eviction controller, as kube-controller-manager runs it (`pkg/controller/devicetainteviction`,
KEP-5055): a pod using an allocated ResourceClaim one of whose devices has a `NoExecute` taint that the claim's
request does not tolerate is deleted, at once, or after the smallest `tolerationSeconds` of the tolerations it uses
(counted from when this controller first saw the taint, where upstream counts from the taint's `timeAdded`); never
when those tolerations have none. The taints are the driver's (in the ResourceSlice) and those of DeviceTaintRules,
applied as the scheduler applies them (`knuma.devices.taintrules`, through the scheduler's `DeviceState`). The pod
gets the `DisruptionTarget` condition (`DeletionByDeviceTaintManager`) and a `DeviceTaintManagerEviction` event
first, as `addConditionAndDeletePod` gives them; a deletion still waiting is cancelled when the taint goes.
`evictionDelay` is upstream's per-device computation, with the node taint eviction controller's rules for picking
the tolerations (`knuma.local.controllers.nodelifecycle.eviction_delay`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx2

from knuma.api.taints import NO_EXECUTE, Taint
from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.devices.pools import DeviceID
from knuma.kube import rest
from knuma.kube.errors import KubeApiError, NotFound
from knuma.kube.events import EventRecorder, timestamp
from knuma.kube.informer import Callbacks, Informer, ignore, object_key
from knuma.kube.tasks import cancel_and_wait
from knuma.local.controllers import nodelifecycle
from knuma.local.controllers.claims import pod_claim_names
from knuma.local.controllers.refs import pod_path, pod_reference
from knuma.scheduler.daemon.claims import DeviceInformers
from knuma.scheduler.plugins.device_state import DeviceState

__all__ = ["CHECK_PERIOD", "DeviceTaintEvictionController", "eviction_delay"]

log = logging.getLogger("knuma.local.controllers")

CHECK_PERIOD = 1.0
"""How often pods using tainted devices are looked at (upstream sets a timer per pod)."""
REASON = "DeletionByDeviceTaintManager"
MESSAGE = "Device Taint manager: deleting due to NoExecute taint"


def eviction_delay(
    claims: Iterable[Mapping[str, Any]], taints_of: Callable[[DeviceID], Iterable[Taint]]
) -> float | None:
    """Seconds until a pod using `claims` is deleted: 0 when a device of an allocated claim has a `NoExecute` taint
    its request result's tolerations do not tolerate, the smallest `tolerationSeconds` of the tolerations used when
    all are tolerated, None when none is `NoExecute` or the tolerations used have no `tolerationSeconds`."""
    delays: list[float] = []
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            device = (str(result.get("driver")), str(result.get("pool")), str(result.get("device")))
            taints = [
                {"key": t.key, "value": t.value, "effect": t.effect}
                for t in taints_of(device)
                if t.effect == NO_EXECUTE
            ]
            if not taints:
                continue
            delay = nodelifecycle.eviction_delay({"tolerations": result.get("tolerations") or []}, taints)
            if delay is not None:
                delays.append(delay)
    return min(delays) if delays else None


class DeviceTaintEvictionController:
    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http
        self.devices = DeviceState()
        self.devices.memo = None  # nothing is allocated here
        self.informers = DeviceInformers(http, self.devices, lambda: None)
        self.pods = Informer(http, "/api/v1/pods", Callbacks(ignore, ignore, ignore))
        self.evictions: dict[str, float] = {}
        """Pod key -> when it is deleted (monotonic seconds; infinity once deleted)."""
        self.events = EventRecorder(http, "device-taint-eviction-controller")
        self.evicted = 0

    def _taints(self) -> dict[DeviceID, tuple[Taint, ...]]:
        return {
            (s.driver, s.pool.name, d.name): d.taints
            for s in self.devices.slices.values()
            for d in s.devices
            if any(t.effect == NO_EXECUTE for t in d.taints)
        }

    async def run(self) -> None:
        """Until cancelled: every `CHECK_PERIOD`, each running pod's claims against the devices' NoExecute taints."""
        informers = [asyncio.create_task(i.run()) for i in (self.pods, *self.informers.all)]
        try:
            while True:
                await asyncio.sleep(CHECK_PERIOD)
                await self._check()
        finally:
            await cancel_and_wait(informers)

    async def _check(self) -> None:
        tainted = self._taints()
        if not tainted:
            self.evictions.clear()
            return
        now = time.monotonic()
        seen: set[str] = set()
        claims = self.devices.claims
        for pod in list(self.pods.store.values()):
            if meta_of(pod).get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in (
                "Succeeded",
                "Failed",
            ):
                continue
            namespace = str(meta_of(pod).get("namespace") or "")
            used = [c for name in pod_claim_names(pod) if (c := claims.get(f"{namespace}/{name}")) is not None]
            delay = eviction_delay(used, lambda device: tainted.get(device, ())) if used else None
            if delay is None:
                continue
            key = object_key(pod)
            seen.add(key)
            deadline = self.evictions.setdefault(key, now + delay)
            if delay == 0 and deadline != math.inf:
                deadline = now
            if now >= deadline and await self._evict(pod):
                self.evictions[key] = math.inf
        for key in set(self.evictions) - seen:
            del self.evictions[key]
            spared = self.pods.store.get(key)
            if spared is not None and not meta_of(spared).get("deletionTimestamp"):
                self.events.record(
                    pod_reference(spared), "Normal", "DeviceTaintManagerEviction", f"Cancelling deletion of Pod {key}"
                )

    async def _evict(self, pod: JsonObj) -> bool:
        key = object_key(pod)
        self.events.record(
            pod_reference(pod), "Normal", "DeviceTaintManagerEviction", f"Marking for deletion Pod {key}"
        )
        path = pod_path(pod)
        try:
            await rest.patch(
                self.http,
                f"{path}/status",
                nodelifecycle.eviction_status(timestamp(), REASON, MESSAGE),
                content_type=STRATEGIC_MERGE_PATCH,
            )
            uid = meta_of(pod).get("uid")
            await rest.delete(self.http, path, body={"preconditions": {"uid": uid}} if uid else None)
        except NotFound:
            return True
        except KubeApiError as err:
            log.warning("device taint eviction: cannot delete pod %s: %s", key, err)
            return False
        self.evicted += 1
        log.info("device taint eviction: deleted pod %s (a device it uses has a NoExecute taint)", key)
        return True
