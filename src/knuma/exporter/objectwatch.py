"""Notice at once when published NodeResourceTopology objects disappear.

The publisher remembers what it wrote and sends nothing while the node's data does not change, so an object deleted
behind its back (`kubectl delete nrt`, or the whole NRT CRD deleted by `knuma remove --all` and created again) would
stay missing until the next resync. This loop lists and then watches the objects (one, with a field selector, for
an exporter; all of them for a node process publishing many) and calls `gone(name)` for every object that is
deleted, and `gone(None)` (everything) when the objects can be listed again after the API stopped serving them,
which is how a re-created CRD shows. While the CRD is absent it retries every `retry` seconds, so a re-created CRD
gets its objects back within about that time instead of after a resync period.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from lightkube import AsyncClient
from lightkube.operators import BinaryOperator, SequenceOperator

from knuma.exporter.publisher import NRT
from knuma.kube.client import lightkube_errors
from knuma.kube.errors import Forbidden, KubeApiError

__all__ = ["watch_for_deletion"]

log = logging.getLogger("knuma.exporter.objectwatch")


async def watch_for_deletion(
    client: AsyncClient,
    gone: Callable[[str | None], None],
    *,
    names: Collection[str] | None = None,
    field_name: str | None = None,
    retry: float = 1.0,
) -> None:
    """Until cancelled (or refused by RBAC). `names`: the objects this process publishes, checked on every relist;
    `field_name`: watch only the object of that name (an exporter's own)."""
    fields: dict[str, str | BinaryOperator | SequenceOperator] | None = (
        {"metadata.name": field_name} if field_name else None
    )
    serving, first = True, True
    while True:
        try:
            with lightkube_errors():
                listed = {str(obj.metadata.name) async for obj in client.list(NRT, fields=fields) if obj.metadata}
                if not serving:
                    log.info("NodeResourceTopology objects can be listed again (CRD re-created?): publishing again")
                    gone(None)
                elif not first:  # at start, publishing the missing objects is the caller's first job anyway
                    for name in set(names or ()) - listed:
                        gone(name)
                serving, first = True, False
                async for event, obj in client.watch(NRT, fields=fields):
                    if event == "DELETED" and obj.metadata is not None and obj.metadata.name:
                        log.info("NodeResourceTopology %s was deleted: publishing it again", obj.metadata.name)
                        gone(str(obj.metadata.name))
        except asyncio.CancelledError:
            raise
        except Forbidden as err:
            log.warning(
                "not allowed to list/watch NodeResourceTopology objects (%s): a deleted object comes back only "
                "at the next resync; grant list and watch on noderesourcetopologies to fix this",
                err.message,
            )
            return
        except (KubeApiError, OSError, ValueError) as err:
            if serving:
                log.info("NodeResourceTopology objects cannot be watched (%s); retrying every %.0fs", err, retry)
            serving = False
            await asyncio.sleep(retry)
