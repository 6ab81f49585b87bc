"""An informer for a resource that not every cluster serves, nor at the same version: DeviceTaintRules are
`resource.k8s.io/v1alpha3` behind an alpha gate in Kubernetes 1.34-1.35 and `v1beta2`, on by default, from 1.36.
`DiscoveredInformer` asks the API server which of the candidate versions serves the resource (the group version's
resource list, as client-go's discovery does), runs an `Informer` on it, and counts as synced while none does, so a
cluster without the resource neither delays start-up nor logs a warning every few seconds; it looks again every
`recheck` seconds, so a version enabled later is picked up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import httpx2

from knuma.kube import rest
from knuma.kube.errors import KubeApiError
from knuma.kube.informer import EventHandler, Informer
from knuma.kube.tasks import cancel_and_wait

__all__ = ["DiscoveredInformer"]

log = logging.getLogger("knuma.kube")


class DiscoveredInformer:
    def __init__(
        self,
        http: httpx2.AsyncClient,
        group: str,
        versions: Sequence[str],
        plural: str,
        handler: EventHandler,
        *,
        recheck: float = 60.0,
    ) -> None:
        """`versions`: the candidates, preferred first."""
        self.http, self.group, self.versions, self.plural = http, group, tuple(versions), plural
        self.handler = handler
        self.recheck = recheck
        self.informer: Informer | None = None
        """The informer of the version found (None while none serves the resource)."""
        self.synced = asyncio.Event()

    @property
    def path(self) -> str:
        return self.informer.path if self.informer is not None else f"/apis/{self.group}/*/{self.plural}"

    @property
    def store(self) -> dict[str, dict[str, object]]:
        return self.informer.store if self.informer is not None else {}

    async def served_version(self) -> str | None:
        """The first candidate version whose resource list has the resource; None when none has."""
        for version in self.versions:
            try:
                body = await rest.get(self.http, f"/apis/{self.group}/{version}")
            except KubeApiError as err:
                if err.status is None:
                    raise  # the server is unreachable: not an answer about the resource
                continue
            if any(r.get("name") == self.plural for r in body.get("resources") or []):
                return version
        return None

    async def run(self) -> None:
        while True:
            try:
                version = await self.served_version()
            except KubeApiError as err:
                log.debug("discovering %s.%s: %s", self.plural, self.group, err)
                version = None
            if version is not None:
                log.info("watching %s.%s at %s", self.plural, self.group, version)
                self.informer = Informer(self.http, f"/apis/{self.group}/{version}/{self.plural}", self.handler)
                task = asyncio.create_task(self.informer.run())
                try:
                    await self.informer.synced.wait()
                    self.synced.set()
                    await task
                finally:
                    await cancel_and_wait([task])
            self.synced.set()  # nothing to wait for: the cluster does not serve it (yet)
            await asyncio.sleep(self.recheck)
