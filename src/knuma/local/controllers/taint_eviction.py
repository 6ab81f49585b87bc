"""The taint eviction controller, as kube-controller-manager runs it (`pkg/controller/tainteviction`).

Each pod on a node with NoExecute taints is deleted at once when one of them is not tolerated, after the smallest
`tolerationSeconds` of the tolerations used otherwise, never when those have none (`processPodOnNode`, decided by
`knuma.local.controllers.nodelifecycle.eviction_delay`); the deletion is cancelled when the taints go. The taints
come from the node lifecycle controller (`knuma.local.controllers.nodelifecycle_controller`) or from anyone.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

import httpx2

from knuma.api.taints import NO_EXECUTE
from knuma.api.types import STRATEGIC_MERGE_PATCH, JsonObj, meta_of
from knuma.kube import rest
from knuma.kube.errors import KubeApiError, NotFound
from knuma.kube.events import EventRecorder, timestamp
from knuma.kube.informer import Informer, object_key
from knuma.local.controllers import nodelifecycle
from knuma.local.controllers.refs import pod_path, pod_reference

__all__ = ["EVICTION_CHECK_PERIOD", "TaintEvictionController"]

log = logging.getLogger("knuma.local.controllers")

EVICTION_CHECK_PERIOD = 1.0
"""How often pods on nodes with NoExecute taints are looked at (upstream sets a timer per pod)."""


class TaintEvictionController:
    def __init__(self, http: httpx2.AsyncClient, nodes: Informer, pods: Informer) -> None:
        self.http, self.nodes, self.pods = http, nodes, pods
        self.evictions: dict[str, float] = {}
        """Pod key -> when it is deleted (monotonic seconds; infinity once deleted)."""
        self.events = EventRecorder(http, "taint-eviction-controller")

    async def run(self) -> None:
        """The taint eviction controller's `processPodOnNode`, every `EVICTION_CHECK_PERIOD`: each pod on a node
        with NoExecute taints is deleted at once when one is not tolerated, after its smallest `tolerationSeconds`
        otherwise (counted from when this first saw it there), never when its tolerations have none; the deletion
        is cancelled when the taints go. The pod gets the `DisruptionTarget` condition first and a
        `TaintManagerEviction` event."""
        while True:
            await asyncio.sleep(EVICTION_CHECK_PERIOD)
            tainted = {
                name: taints
                for name, node in self.nodes.store.items()
                if (taints := (node.get("spec") or {}).get("taints") or [])
                and any(t.get("effect") == NO_EXECUTE for t in taints)
            }
            if not tainted:
                self.evictions.clear()
                continue
            now = time.monotonic()
            seen: set[str] = set()
            for pod in list(self.pods.store.values()):
                node = (pod.get("spec") or {}).get("nodeName")
                if node not in tainted or meta_of(pod).get("deletionTimestamp"):
                    continue
                delay = nodelifecycle.eviction_delay(pod.get("spec") or {}, tainted[node])
                if delay is None:
                    continue
                key = object_key(pod)
                seen.add(key)
                deadline = self.evictions.setdefault(key, now + delay)
                if delay == 0 and deadline != math.inf:  # a taint it does not tolerate: at once, whatever was due
                    deadline = now
                if now >= deadline and await self._evict(pod):
                    self.evictions[key] = math.inf  # deleted: not again while the informer catches up
            for key in set(self.evictions) - seen:
                del self.evictions[key]
                spared = self.pods.store.get(key)
                if spared is not None and not meta_of(spared).get("deletionTimestamp"):
                    self.events.record(
                        pod_reference(spared), "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key}"
                    )

    async def _evict(self, pod: JsonObj) -> bool:
        """`addConditionAndDeletePod`, with the event `emitPodDeletionEvent` sends; False when the pod could not be
        deleted (retried on the next pass)."""
        key = object_key(pod)
        self.events.record(pod_reference(pod), "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        path = pod_path(pod)
        stamp = timestamp()
        try:
            await rest.patch(
                self.http, f"{path}/status", nodelifecycle.eviction_status(stamp), content_type=STRATEGIC_MERGE_PATCH
            )
            await rest.delete(self.http, path)
        except NotFound:
            return True
        except KubeApiError as err:
            log.warning("taint eviction: cannot delete pod %s: %s", key, err)
            return False
        log.info("taint eviction: deleted pod %s from tainted node %s", key, pod["spec"]["nodeName"])
        return True
