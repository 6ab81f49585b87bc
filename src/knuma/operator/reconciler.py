"""One reconcile pass over the operator's custom resources: apply what `desired` renders, read readiness, write status.

Synchronous and stateless (everything is read from the cluster each pass), so the loop in `manager` can run it in a
worker thread on every event and on a resync period, and a pass after a crash or a restart converges the same way.

Per custom resource, in numaresources-operator's order: wrong name → Degraded; pause annotation → skipped (status
untouched); invalid spec → Degraded with the message naming the field; otherwise server-side apply every object
(field manager `knuma-operator`, conflicts forced: drift is overwritten), delete the DaemonSets of node groups that
are gone, and report Progressing until every workload is ready (`knuma.kube.wait.readiness`: observed by its
controller, all pods ready and updated), Available after. Status goes through the `status` subresource as a merge
patch, and only when it changed, so writing it does not wake the loop forever.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from knuma.api.numaresources import (
    API_VERSION,
    OPERATOR_NAME,
    OPERATOR_PLURAL,
    SCHEDULER_NAME,
    SCHEDULER_PLURAL,
    OperatorSpec,
    SchedulerInformer,
    SpecError,
    is_paused,
    parse_operator_spec,
    parse_scheduler_spec,
)
from knuma.deploy.cluster import Session, control_plane_replicas
from knuma.deploy.images import Images
from knuma.deploy.objects import Manifest
from knuma.deploy.options import format_duration
from knuma.errors import OperationFailed
from knuma.kube import rest
from knuma.kube.apply import Change, apply_object, delete_object, get_object
from knuma.kube.errors import KubeApiError, NotFound
from knuma.kube.resources import UnknownKindError, object_ref
from knuma.kube.wait import readiness
from knuma.operator import conditions as cond
from knuma.operator.desired import (
    DEFAULT_NAMESPACE,
    OWNED_BY_LABEL,
    operator_objects,
    scheduler_objects,
    scheduler_options,
)
from knuma.operator.kubeletconfig import read_group_kubelet, read_openshift_sources
from knuma.operator.metrics import OperatorMetrics, Result

__all__ = ["FIELD_MANAGER", "PROGRESS_REQUEUE", "Reconciler", "Settings"]

log = logging.getLogger("knuma.operator")

FIELD_MANAGER = "knuma-operator"
#: Re-check not-yet-ready workloads this often, as upstream does (5 s).
PROGRESS_REQUEUE = 5.0
_WORKLOADS = ("DaemonSet", "Deployment")


@dataclass(frozen=True, slots=True)
class Settings:
    namespace: str = DEFAULT_NAMESPACE
    images: Images = field(default_factory=Images)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reason(err: Exception) -> str:
    if isinstance(err, KubeApiError):
        return err.summary
    return str(err)


def _related(obj: Manifest) -> dict[str, str]:
    group = obj["apiVersion"].rpartition("/")[0]
    out = {"group": group, "resource": obj["kind"].lower() + "s", "name": obj["metadata"]["name"]}
    if obj["metadata"].get("namespace"):
        out["namespace"] = obj["metadata"]["namespace"]
    return out


@dataclass
class _Pass:
    """What one custom resource's pass produced: the outcome and the extra status fields."""

    outcome: cond.Outcome
    fields: dict[str, Any] = field(default_factory=dict)
    requeue: float | None = None
    extra: list[tuple[str, bool, str, str]] = field(default_factory=list)
    """Conditions beyond the base four: (type, status, reason, message)."""


class Reconciler:
    def __init__(
        self,
        session: Session,
        settings: Settings = Settings(),
        now: Callable[[], str] = _now,
        metrics: OperatorMetrics | None = None,
    ) -> None:
        self.session = session
        self.settings = settings
        self.now = now
        self.metrics = metrics or OperatorMetrics()
        self._kubelet_sources: dict[str, tuple[str, dict[str, Any]]] = {}

    # -- the loop's entry point ------------------------------------------------------------------------------------

    def reconcile_all(self) -> float | None:
        """Reconcile every NUMAResourcesOperator and NUMAResourcesScheduler; the shortest requeue asked for."""
        requeues = [
            self._reconcile_kind(OPERATOR_PLURAL, OPERATOR_NAME, self._operator, cond.REASON_WRONG_OPERATOR_NAME),
            self._reconcile_kind(SCHEDULER_PLURAL, SCHEDULER_NAME, self._scheduler, cond.REASON_WRONG_SCHEDULER_NAME),
        ]
        return min((r for r in requeues if r is not None), default=None)

    def _reconcile_kind(
        self, plural: str, singleton: str, body: Callable[[dict[str, Any]], _Pass], wrong_name: str
    ) -> float | None:
        try:
            listed = rest.request_sync(self.session.http, "GET", f"/apis/{API_VERSION}/{plural}")
        except NotFound:
            log.warning("the %s CRD is not installed; run knuma operator --install-crds", plural)
            return None
        kind = str(listed.get("kind", "")).removesuffix("List")
        requeue: float | None = None
        for obj in listed.get("items") or []:
            obj.setdefault("apiVersion", API_VERSION)
            obj.setdefault("kind", kind)
            name = obj["metadata"]["name"]
            if name != singleton:
                result = _Pass(
                    cond.degraded(
                        wrong_name,
                        f"incorrect {obj['kind']} resource name {name!r}: the only accepted name is {singleton!r}; "
                        f"create the resource as {singleton}",
                    )
                )
            elif is_paused(obj):
                log.info("%s %s: reconciliation paused by annotation", obj["kind"], name)
                continue
            else:
                result = self._timed(plural, body, obj)
            self._write_status(plural, obj, result)
            if result.requeue is not None:
                requeue = result.requeue if requeue is None else min(requeue, result.requeue)
        return requeue

    def _timed(self, plural: str, body: Callable[[dict[str, Any]], _Pass], obj: dict[str, Any]) -> _Pass:
        """`body(obj)`, counted and timed per controller as controller-runtime does."""
        controller = plural.removesuffix("s")
        started = time.perf_counter()
        try:
            result = body(obj)
        except Exception:
            self.metrics.record(controller, Result.ERROR, time.perf_counter() - started)
            raise
        if result.outcome.condition == cond.DEGRADED:
            outcome = Result.ERROR
        elif result.requeue is not None:
            outcome = Result.REQUEUE_AFTER
        else:
            outcome = Result.SUCCESS
        self.metrics.record(controller, outcome, time.perf_counter() - started)
        return result

    # -- applying ------------------------------------------------------------------------------------------------

    def _apply(self, objects: list[Manifest]) -> list[str]:
        """Apply in order; the names of the objects that changed. Raises on the first failure."""
        changed = []
        for obj in objects:
            try:
                outcome = apply_object(self.session.client, self.session.mapper, obj, field_manager=FIELD_MANAGER)
            except (KubeApiError, UnknownKindError) as err:
                raise _ApplyError(f"cannot apply {object_ref(obj)}: {_reason(err)}") from err
            if outcome.change is not Change.UNCHANGED:
                changed.append(f"{outcome.ref} {outcome.change}")
                log.info("%s %s", outcome.ref, outcome.change)
            if obj["kind"] == "CustomResourceDefinition" and outcome.change is Change.CREATED:
                self.session.mapper.forget()
        return changed

    def _not_ready(self, objects: list[Manifest]) -> list[str]:
        out = []
        for obj in objects:
            if obj["kind"] not in _WORKLOADS:
                continue
            state = readiness(get_object(self.session.client, self.session.mapper, obj))
            if not state.ready:
                out.append(f"{object_ref(obj)} is updating: {state.detail}")
        return out

    def _delete_dangling_daemonsets(self, owner: str, wanted: set[str]) -> None:
        ns = self.settings.namespace
        listed = rest.request_sync(
            self.session.http,
            "GET",
            f"/apis/apps/v1/namespaces/{ns}/daemonsets",
            params={"labelSelector": f"{OWNED_BY_LABEL}={owner}"},
        )
        for item in listed.get("items") or []:
            name = item["metadata"]["name"]
            if name not in wanted:
                ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": ns}}
                outcome = delete_object(self.session.client, self.session.mapper, ds)
                log.info("%s %s (its node group is gone)", outcome.ref, outcome.change)

    def _converge(self, objects: list[Manifest]) -> cond.Outcome | None:
        """Apply, then Progressing while a workload is not ready; None when everything is ready."""
        try:
            self._apply(objects)
        except _ApplyError as err:
            log.error("%s", err)
            return cond.degraded(cond.REASON_INTERNAL_ERROR, str(err))
        pending = self._not_ready(objects)
        if pending:
            return cond.progressing("; ".join(pending))
        return None

    # -- the two controllers -------------------------------------------------------------------------------------

    def _operator(self, obj: dict[str, Any]) -> _Pass:
        try:
            spec = parse_operator_spec(obj.get("spec"))
        except SpecError as err:
            return _Pass(cond.degraded(cond.REASON_VALIDATION, f"{err}; fix the NUMAResourcesOperator spec"))
        kubelet = self._group_kubelets(spec)
        objects = operator_objects(obj, spec, self.settings.namespace, self.settings.images, kubelet)
        daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
        outcome = self._converge(objects)
        if outcome is None or outcome.condition != cond.DEGRADED:
            self._delete_dangling_daemonsets(obj["metadata"]["name"], {d["metadata"]["name"] for d in daemonsets})
        refs = [{"namespace": d["metadata"]["namespace"], "name": d["metadata"]["name"]} for d in daemonsets]
        fields = {
            "daemonsets": refs,
            "nodeGroups": [
                {"daemonsets": ref, "config": group.config.to_dict(), "selector": group.pool}
                for ref, group in zip(refs, spec.node_groups, strict=True)
            ],
            "relatedObjects": [
                {"resource": "namespaces", "name": self.settings.namespace},
                *(_related(d) for d in daemonsets),
            ],
        }
        if outcome is None:
            groups = len(spec.node_groups)
            outcome = cond.available(f"{groups} node group(s) reconciled, exporter DaemonSets ready")
        requeue = PROGRESS_REQUEUE if outcome.condition == cond.PROGRESSING else None
        return _Pass(outcome, fields, requeue)

    def _group_kubelets(self, spec: OperatorSpec) -> dict[str, dict[str, Any]]:
        """The kubeletconfig controller's part: each node group's distilled kubelet settings, by pool."""
        kubeletconfigs, pools = read_openshift_sources(self.session.http)
        out: dict[str, dict[str, Any]] = {}
        for group in spec.node_groups:
            found = read_group_kubelet(self.session.http, group, kubeletconfigs, pools)
            for warning in found.warnings:
                log.warning("node group %s: %s", group.pool, warning)
            if self._kubelet_sources.get(group.pool) != (found.source, found.settings):
                self._kubelet_sources[group.pool] = (found.source, found.settings)
                log.info("node group %s: kubelet settings from %s: %s", group.pool, found.source, found.settings)
            out[group.pool] = found.settings
        return out

    def _scheduler(self, obj: dict[str, Any]) -> _Pass:
        try:
            spec = parse_scheduler_spec(obj.get("spec"))
        except SpecError as err:
            return _Pass(
                cond.degraded(cond.REASON_INVALID_SCHEDULER_SPEC, f"{err}; fix the NUMAResourcesScheduler spec")
            )
        replicas = spec.replicas or control_plane_replicas(self.session.client)
        objects = scheduler_objects(obj, spec, replicas, self.settings.namespace, self.settings.images)
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        outcome = self._converge(objects)
        fields = {
            "deployment": {"namespace": self.settings.namespace, "name": deployment["metadata"]["name"]},
            "schedulerName": scheduler_options(spec, replicas).profile_name,
            "relatedObjects": [
                {"resource": "namespaces", "name": self.settings.namespace},
                _related(deployment),
            ],
        }
        if spec.cache_resync_period is not None:
            fields["cacheResyncPeriod"] = format_duration(spec.cache_resync_period)
        if outcome is None:
            outcome = cond.available(f"scheduler {fields['schedulerName']} ready with {replicas} replica(s)")
        requeue = PROGRESS_REQUEUE if outcome.condition == cond.PROGRESSING else None
        dedicated = spec.scheduler_informer is SchedulerInformer.DEDICATED
        informer = (
            cond.DEDICATED_INFORMER_ACTIVE,
            dedicated,
            "DedicatedInformer" if dedicated else "SharedInformer",
            f"schedulerInformer: {spec.scheduler_informer.value} (cache.informerMode)",
        )
        return _Pass(outcome, fields, requeue, [informer])

    # -- status ----------------------------------------------------------------------------------------------------

    def _write_status(self, plural: str, obj: dict[str, Any], result: _Pass) -> None:
        md = obj["metadata"]
        old = obj.get("status") or {}
        conditions = cond.update_conditions(
            old.get("conditions") or [], result.outcome, md.get("generation", 0), self.now()
        )
        for kind, value, reason, message in result.extra:
            conditions = cond.set_condition(
                conditions, kind, value, reason, message, md.get("generation", 0), self.now()
            )
        status = {**old, **result.fields, "conditions": conditions}
        if status == old:
            return
        try:
            rest.request_sync(
                self.session.http,
                "PATCH",
                f"/apis/{API_VERSION}/{plural}/{md['name']}/status",
                body={"status": status},
            )
        except KubeApiError as err:
            if err.status is None:
                raise  # the API server cannot be reached: the loop backs off and retries the pass
            log.error("cannot write the status of %s %s: %s", obj["kind"], md["name"], err)
            return
        before = cond.find(old.get("conditions") or [], result.outcome.condition) or {}
        if (before.get("status"), before.get("message")) != ("True", result.outcome.message):
            log.info(
                "%s %s: %s=True %s %s",
                obj["kind"],
                md["name"],
                result.outcome.condition,
                result.outcome.reason,
                result.outcome.message,
            )


class _ApplyError(OperationFailed):
    pass
