"""The resync debug dump: what the overreserve cache saw at each fingerprint check, for a bug report.

A node stuck "invalid node topology data" or over-reserved is hard to explain from the outside: the answer is in
what the scheduler's cache compared at resync. Upstream keeps it through the podfingerprint tracer:
`checkPodFingerprintForNode` (scheduler-plugins `pkg/noderesourcetopology/cache/overreserve.go`) fills a
`podfingerprint.Status` (node, expected and computed fingerprint, the pods it counted) and hands it to
`MarkCompleted`; openshift-kni/scheduler-plugins' `pkg-kni/pfpstatus` collects those in a bounded recorder (5000 nodes,
the last 10 checks per node) when the environment variable `PFP_STATUS_DUMP` names a directory, and writes each node's
checks to `<dir>/<node>.json` every 10 s. numaresources-operator sets `PFP_STATUS_DUMP=/run/pfpstatus` on the
scheduler's Deployment when the NUMAResourcesScheduler has `cacheResyncDebug: DumpJSONFile` (its default).

knuma's scheduler does the same with the same variable, and records more of the cache state behind each check: the
pods assumed (reserved) on the node, the node's cached view (available per zone) before the check, whether the
cache was dirty and what the check decided. Each check is also logged (logger `knuma.scheduler.cache.resync`, one
JSON line per check) so that `kubectl logs` shows it without reaching the pod's files; the files are written at
the end of every resync pass that checked something (upstream: every 10 s). A directory that does not exist
disables the files only, with a warning, as upstream "discards everything" then.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DUMP_ENV", "MAX_NODES", "MAX_SAMPLES_PER_NODE", "ResyncCheck", "ResyncDump"]

log = logging.getLogger("knuma.scheduler.cache.resync")

DUMP_ENV = "PFP_STATUS_DUMP"
"""The variable numaresources-operator sets (and pfpstatus reads): the directory of the JSON files."""
MAX_NODES = 5000
MAX_SAMPLES_PER_NODE = 10


@dataclass(frozen=True)
class ResyncCheck:
    """One node's resync check; the first four fields are `podfingerprint.Status`'s JSON."""

    node: str
    expected: str
    """The fingerprint the NRT publishes (empty: the exporter publishes none)."""
    computed: str
    """The fingerprint of `pods` (empty when the check stopped before computing it)."""
    pods: tuple[tuple[str, str], ...]
    """(namespace, name) of the pods the computed fingerprint counts, in the order they were added."""
    result: str
    """`flushed` (fingerprints match: the NRT adopted), `mismatch` (stays dirty), `config-changed` (adopted without a
    check), or `skipped: <reason>` (upstream's log messages)."""
    only_exclusive: bool = False
    assumed: tuple[str, ...] = ()
    """Pods reserved on the node beyond its stored NRT at the check (what the flush drops)."""
    view: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """The node's cached view before the check: zone name → available amounts (CPU in millicores)."""
    dirty: tuple[str, ...] = ()
    """Why the node was checked: `foreign`, `maybe-over-reserved`, `config-changed`."""

    def to_json(self, recorded: dt.datetime) -> dict[str, Any]:
        return {
            "nodeName": self.node,
            "fingerprintExpected": self.expected,
            "fingerprintComputed": self.computed,
            "pods": [{"namespace": ns, "name": name} for ns, name in self.pods],
            "recordTime": recorded.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "onlyExclusiveResources": self.only_exclusive,
            "result": self.result,
            "dirty": list(self.dirty),
            "assumedPods": list(self.assumed),
            "view": {zone: dict(amounts) for zone, amounts in self.view.items()},
        }


class ResyncDump:
    """The recorder: the last `max_samples` checks of at most `max_nodes` nodes, logged as they come and written to
    `directory` (one `<node>.json` per node, a JSON list, oldest first) by `write`."""

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        max_nodes: int = MAX_NODES,
        max_samples: int = MAX_SAMPLES_PER_NODE,
        clock: Any = None,
    ) -> None:
        self.directory = Path(directory) if directory else None
        self.max_nodes = max_nodes
        self.max_samples = max_samples
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.samples: dict[str, collections.deque[dict[str, Any]]] = {}
        self._pending: set[str] = set()

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> ResyncDump | None:
        """The dump `PFP_STATUS_DUMP` asks for, or None when it is unset or empty (no debug dump)."""
        directory = environ.get(DUMP_ENV, "")
        if not directory:
            return None
        if not Path(directory).is_dir():
            log.warning(
                "%s=%s: not a directory; resync checks are logged but not written to files (mount a directory there)",
                DUMP_ENV,
                directory,
            )
            return cls(None)
        log.info(
            "resync debug dump on: every NRT cache resync check is logged and written to %s/<node>.json", directory
        )
        return cls(directory)

    def record(self, check: ResyncCheck) -> None:
        entry = check.to_json(self.clock())
        log.info("nrtcache resync check %s", json.dumps(entry, sort_keys=True, separators=(",", ":")))
        samples = self.samples.get(check.node)
        if samples is None:
            if len(self.samples) >= self.max_nodes:
                return  # as upstream's recorder: a full recorder drops new nodes
            samples = self.samples[check.node] = collections.deque(maxlen=self.max_samples)
        samples.append(entry)
        self._pending.add(check.node)

    def write(self) -> int:
        """Write the nodes checked since the last call to their files; how many files were written. A write that
        fails is logged, never raised: debugging must not stop the scheduler."""
        pending, self._pending = self._pending, set()
        if self.directory is None:
            return 0
        written = 0
        for node in sorted(pending):
            target = self.directory / f"{node}.json"
            partial = target.with_name(f".{node}.json.tmp")
            try:
                partial.write_text(json.dumps(list(self.samples[node]), indent=2) + "\n")
                partial.replace(target)  # readers never see half a file
                written += 1
            except OSError as err:
                log.warning("cannot write the resync dump %s: %s", target, err)
        return written
