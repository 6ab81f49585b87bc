"""The simulated fabric manager of `knuma up --fabric-gpus N`: it publishes the fabric driver's ResourceSlice and
DeviceClass (`knuma.testbed.fabric`), and attaches the devices the scheduler allocates.

A claim allocated fabric devices is pinned to a node (`bindsToNode`); the scheduler holds its pod in PreBind until
the driver reports the devices attached (KEP-5007). This controller plays that driver: `attach_delay` seconds after
it first saw the allocation (a real attach takes a while: switch reconfiguration, hot-plug), it writes the devices'
binding condition True into the claim's `status.devices`, or the failure condition for a claim annotated
`sim.knuma.io/fabric-attach: fail`, through `/status` with the resourceVersion it read (a conflict waits for the
informer's newer copy). An allocation given up before the delay ran out (deallocated, deleted) is forgotten: nothing
is written for it. Dropping `status.devices` with the allocation is the scheduler's and the claim controller's.
"""

from __future__ import annotations

import contextlib
import logging
import time

import httpx2

from knuma.api.types import JsonObj
from knuma.kube import rest
from knuma.kube.errors import Conflict, NotFound
from knuma.kube.events import timestamp
from knuma.kube.informer import Callbacks, Informer, object_key
from knuma.local.controllers.workqueue import WorkQueue
from knuma.testbed.fabric import DRIVER, SLICE_NAME, attach_report, fabric_device_class, fabric_slice, pending_attach

__all__ = ["DEFAULT_ATTACH_DELAY", "FabricAttachController", "withdraw"]

log = logging.getLogger("knuma.local.controllers")

DEFAULT_ATTACH_DELAY = 3.0
CLAIMS = "/apis/resource.k8s.io/v1/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
CLAIM = "claim"


class FabricAttachController:
    def __init__(self, http: httpx2.AsyncClient, devices: int, attach_delay: float = DEFAULT_ATTACH_DELAY) -> None:
        self.http = http
        self.devices = devices
        self.attach_delay = attach_delay
        self.queue = WorkQueue("fabric attach")
        enqueue = self._enqueue
        self.claims = Informer(http, CLAIMS, Callbacks(enqueue, lambda _, new: enqueue(new), enqueue))
        self._first_seen: dict[str, tuple[tuple[str, ...], float]] = {}
        """Claim key -> (the allocation waiting for its attach, when it was first seen; monotonic seconds)."""
        self.attached = 0
        self.failed = 0

    def _enqueue(self, claim: JsonObj) -> None:
        self.queue.add(CLAIM, object_key(claim))

    async def publish(self) -> None:
        """Create the driver's DeviceClass (kept if an earlier run made it) and ResourceSlice (replaced if an earlier
        run left one that differs: another count)."""
        with contextlib.suppress(Conflict):
            await rest.post(self.http, CLASSES, fabric_device_class())
        body = fabric_slice(self.devices)
        path = f"{SLICES}/{SLICE_NAME}"
        try:
            current = await rest.get(self.http, path)
        except NotFound:
            await rest.post(self.http, SLICES, body)
            return
        if current.get("spec") != body["spec"]:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await rest.put(self.http, path, body)

    async def run(self) -> None:
        """Attach what the scheduler allocates, until cancelled."""
        await self.queue.run([self.claims], self._sync)

    async def _sync(self, kind: str, key: str) -> None:
        claim = self.claims.store.get(key)
        attach = pending_attach(claim) if claim is not None else None
        if claim is None or attach is None:
            self._first_seen.pop(key, None)  # deleted, deallocated or reported: no attach left waiting
            return
        now = time.monotonic()
        seen = self._first_seen.get(key)
        if seen is None or seen[0] != attach.identity:
            seen = self._first_seen[key] = (attach.identity, now)
        remaining = seen[1] + self.attach_delay - now
        if remaining > 0:
            self.queue.add_after(remaining, kind, key)
            return
        status = dict(claim.get("status") or {})
        status["devices"] = attach_report(claim, attach, timestamp())
        try:
            await rest.put(self.http, f"{_claim_path(claim)}/status", {**claim, "status": status})
        except Conflict:
            return  # changed meanwhile: the informer delivers the newer claim, which is synced again
        except NotFound:
            return
        self._first_seen.pop(key, None)
        if attach.fail:
            self.failed += 1
        else:
            self.attached += 1
        log.info(
            "fabric: claim %s: %s %s %s",
            key,
            ", ".join(attach.devices),
            "failed to attach to" if attach.fail else "attached to",
            attach.node,
        )


def _claim_path(claim: JsonObj) -> str:
    meta = claim.get("metadata") or {}
    return f"/apis/resource.k8s.io/v1/namespaces/{meta.get('namespace')}/resourceclaims/{meta.get('name')}"


async def withdraw(http: httpx2.AsyncClient) -> None:
    """Remove the ResourceSlice and DeviceClass an earlier `knuma up --fabric-gpus` left in a resumed data directory:
    without the flag no fabric manager runs, so its devices would be allocated and never attached."""
    for path in (f"{SLICES}/{SLICE_NAME}", f"{CLASSES}/{DRIVER}"):
        try:
            await rest.delete(http, path)
        except NotFound:
            continue
        log.info("fabric: removed %s of an earlier run (no --fabric-gpus)", "/".join(path.rsplit("/", 2)[-2:]))
