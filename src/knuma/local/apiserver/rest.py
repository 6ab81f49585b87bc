"""REST semantics of the API, independent of HTTP: create, get, list, update, patch, delete, bind.

This is where Kubernetes' object rules live: metadata (uid, creationTimestamp, generation, resourceVersion),
optimistic concurrency, status subresources, namespaces that must exist, finalizers and `deletionTimestamp`,
garbage collection through `ownerReferences`, graceful pod deletion, namespace deletion, CRD registration and schema
validation, and field ownership. `app.py` only translates HTTP to these calls.
"""

from __future__ import annotations

import base64
import copy
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from knuma.api.podresize import resize_update
from knuma.api.types import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, JsonObj
from knuma.local.apiserver import (
    bodies,
    celrules,
    conversion,
    crdvalidation,
    errors,
    fieldmanager,
    fieldschema,
    metadata,
    patch,
    priority,
    schema,
)
from knuma.local.apiserver import crd as crds
from knuma.local.apiserver.default_tolerations import add_default_tolerations
from knuma.local.apiserver.defaults import (
    apply_defaults,
    apply_dra_defaults,
    apply_update_defaults,
    prepare_dra_update,
)
from knuma.local.apiserver.gc import POD_GR, GarbageCollector
from knuma.local.apiserver.graceful import before_delete
from knuma.local.apiserver.poddefaults import default_pod
from knuma.local.apiserver.resources import BUILTIN_RESOURCES, Registry, ResourceType
from knuma.local.apiserver.selectors import fields_match, labels_match, parse_field_selector, parse_label_selector
from knuma.local.apiserver.store import GroupResource, Store
from knuma.local.apiserver.validation import validate_object, validate_update

CRD_GR: GroupResource = ("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACE_GR: GroupResource = ("", "namespaces")
PRIORITY_CLASS_GR: GroupResource = ("scheduling.k8s.io", "priorityclasses")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

APPLY_PATCH_CBOR = "application/apply-patch+cbor"


MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def _api_version_mismatch(api_version: str, rt: ResourceType) -> str:
    return f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ListResult:
    items: list[JsonObj]
    resource_version: str
    continue_token: str
    remaining: int | None


@dataclass(frozen=True)
class WriteOptions:
    manager: str
    dry_run: bool = False
    force: bool = False
    #: `fieldValidation`: "Strict" (kubectl's default) rejects unknown fields, "Warn" (the default) and "Ignore" drop
    #: them, with and without a warning.
    field_validation: str = ""
    #: Where writes put their warnings (the HTTP layer sends them as `Warning` headers).
    warnings: list[str] = field(default_factory=list)


def _meta(obj: JsonObj) -> JsonObj:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


UNVERSIONED_KINDS = frozenset(
    {
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Event",
        "Lease",
        "Namespace",
        "Node",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
    }
)
"""Built-in kinds whose registry strategies never set `metadata.generation` (it counts spec changes, and these have
no spec a controller observes): kube-apiserver shows none, nor does knuma's."""


def _tracks_generation(rt: ResourceType) -> bool:
    return rt.custom or rt.kind not in UNVERSIONED_KINDS


def _content(obj: JsonObj) -> JsonObj:
    """What `generation` tracks: everything but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class ObjectService:
    """The object rules on top of a `Store`; one per server, used only from the server's event loop."""

    def __init__(self, store: Store, registry: Registry, defer: Callable[[Callable[[], None]], None]) -> None:
        self.store = store
        self.registry = registry
        self.gc = GarbageCollector(store, self, defer)
        self._load_stored()

    def _load_stored(self) -> None:
        """Index the stored objects and serve the stored CRDs. An object the server could not serve (written by an
        older version that validated less, or edited by hand) is reported and set aside, never fatal: one bad row
        must not keep the whole cluster's API down."""
        for gr, obj in list(self.store.iter_all()):
            if gr == POD_GR:
                # kube-apiserver defaults what it reads from etcd too: a pod an older version stored gets the
                # defaults a new one would have, so that an update of it (a label) does not add them as a change
                default_pod(obj)
            problems = metadata.causes(obj["metadata"])
            if gr == CRD_GR and not problems:
                problems = crdvalidation.causes(obj, obj, BUILTIN_RESOURCES, approval=False)
            if problems:
                self.store.set_aside(gr, obj, "; ".join(f"{f}: {m}" for _, f, m in problems))
                continue
            self.gc.index(gr, obj)
        for gr, crd in list(self.store.iter_all()):
            if gr == CRD_GR:
                self._register_crd(crd)

    # -- bootstrap -----------------------------------------------------------------------------------------------

    def ensure_system_namespaces(self) -> None:
        rt = self.rt_for(NAMESPACE_GR)
        for name in SYSTEM_NAMESPACES:
            if self.store.get(NAMESPACE_GR, "", name) is None:
                self.create(
                    rt,
                    "",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                    WriteOptions("knuma-apiserver"),
                )

    def ensure_system_priority_classes(self) -> None:
        """`AddSystemPriorityClasses`: `system-node-critical` and `system-cluster-critical` exist from the start."""
        rt = self.rt_for(PRIORITY_CLASS_GR)
        for pc in priority.SYSTEM_PRIORITY_CLASSES:
            if self.store.get(PRIORITY_CLASS_GR, "", pc["metadata"]["name"]) is None:
                self.create(rt, "", copy.deepcopy(pc), WriteOptions("knuma-apiserver"))

    def _admit(self, rt: ResourceType, obj: JsonObj, existing: JsonObj | None) -> None:
        """The mutating and validating admission kube-apiserver runs on every write by default that the stack
        depends on: `Priority` (`knuma.local.apiserver.priority`) and `DefaultTolerationSeconds`
        (`knuma.local.apiserver.default_tolerations`)."""
        if rt.custom:
            return
        if rt.group_resource == POD_GR:
            add_default_tolerations(obj)
            if existing is None:
                priority.admit_pod_create(obj, self.store.scan(PRIORITY_CLASS_GR))
            else:
                priority.keep_priority_on_update(existing, obj)
        elif rt.group_resource == PRIORITY_CLASS_GR:
            priority.check_single_default(obj, self.store.scan(PRIORITY_CLASS_GR), updating=existing is not None)

    def resume_pending(self) -> None:
        """Finish deletions a crash interrupted (see `GarbageCollector.resume_pending`)."""
        self.gc.resume_pending()

    # -- helpers -------------------------------------------------------------------------------------------------

    def rt_for(self, gr: GroupResource) -> ResourceType:
        for rt in self.registry.all():
            if rt.group_resource == gr and rt.version == rt.storage_version:
                return rt
        for rt in self.registry.all():
            if rt.group_resource == gr:
                return rt
        raise errors.resource_not_found()

    @staticmethod
    def view(rt: ResourceType, obj: JsonObj) -> JsonObj:
        """`obj` as served at `rt`'s group and version (see `conversion`)."""
        return conversion.from_storage(rt, obj)

    def put(self, gr: GroupResource, obj: JsonObj, *, created: bool, old: JsonObj | None = None) -> JsonObj:
        """Store and keep the garbage collector's indexes current."""
        if old is not None:
            self.gc.unindex(gr, old)
        stored = self.store.put(gr, obj, created=created)
        self.gc.index(gr, stored)
        self.gc.check_owners(stored)
        return stored

    def remove(self, gr: GroupResource, obj: JsonObj) -> JsonObj:
        md = _meta(obj)
        self.gc.unindex(gr, obj)
        final = self.store.remove(gr, md.get("namespace") or "", md["name"]) or obj
        self.gc.after_remove(final)
        if gr == CRD_GR:
            self._unregister_crd(final)
        return final

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str, *, creating: bool) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACE_GR, "", namespace)
        if ns is None:
            raise errors.namespace_not_found(namespace)
        if creating and _meta(ns).get("deletionTimestamp"):
            raise errors.forbidden_namespace_terminating(namespace, rt.kind, name)

    def _parse_body(self, rt: ResourceType, body: Any, namespace: str) -> JsonObj:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        obj = copy.deepcopy(body)
        api_version = obj.setdefault("apiVersion", rt.api_version)
        kind = obj.setdefault("kind", rt.kind)
        if rt.kind == "CustomResourceDefinition" or rt.custom:
            group = rt.group
            if api_version.rpartition("/")[0] != group:
                raise errors.bad_request(_api_version_mismatch(api_version, rt))
        elif api_version != rt.api_version:
            raise errors.bad_request(_api_version_mismatch(api_version, rt))
        if kind != rt.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        md = obj.setdefault("metadata", {})
        if not isinstance(md, dict):
            raise errors.bad_request("metadata must be an object")
        md_causes = metadata.causes(md)
        if md_causes:
            shown = md.get("name")
            raise errors.invalid(rt.kind, rt.group, shown if isinstance(shown, str) else "", md_causes)
        if rt.namespaced:
            if md.get("namespace") and md["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            md["namespace"] = namespace
        else:
            md.pop("namespace", None)
        obj["apiVersion"] = rt.api_version
        return obj

    def _validate(
        self, rt: ResourceType, obj: JsonObj, opts: WriteOptions, old: JsonObj | None = None, *, status: bool = False
    ) -> JsonObj:
        """`status`: a write to the status subresource, whose spec is the stored one: a Pod's spec rules are not
        checked again (`ValidatePodStatusUpdate` validates the status and metadata only), so a stored pod that a later
        rule would refuse can still have its status written."""
        apply_dra_defaults(rt.kind if rt.group == "resource.k8s.io" and not rt.custom else "", obj)
        if not rt.custom:
            obj = self._decode_builtin(rt, obj, opts)
        validate_object(rt, obj, spec=not status)
        if rt.group_resource == CRD_GR:
            crd_causes = crdvalidation.causes(obj, old, BUILTIN_RESOURCES)
            if crd_causes:
                raise errors.invalid(rt.kind, rt.group, str(_meta(obj).get("name", "")), crd_causes)
        if rt.schema is not None:
            if opts.field_validation == "Strict":
                unknown = schema.unknown_fields(rt.schema, obj)
                if unknown:
                    listed = ", ".join(f'unknown field "{f}"' for f in unknown)
                    raise errors.bad_request(
                        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                        f"strict decoding error: {listed}"
                    )
            causes = schema.validate(rt.schema, obj)
            if causes:
                raise errors.invalid(rt.kind, rt.group, str(_meta(obj).get("name", "")), causes)
            obj = schema.prune(rt.schema, obj)
            if rt.validation_rules:  # CEL rules run on the pruned object, after the schema's own checks
                verdict = celrules.evaluate(rt.schema, obj, old)
                opts.warnings.extend(verdict.warnings)
                if verdict.causes:
                    raise errors.invalid(rt.kind, rt.group, str(_meta(obj).get("name", "")), verdict.causes)
        return obj

    def _decode_builtin(self, rt: ResourceType, obj: JsonObj, opts: WriteOptions) -> JsonObj:
        """What kube-apiserver's decoder does to a built-in kind: 400 for values of the wrong type and malformed
        quantities; unknown fields dropped, with a 400 (Strict), a warning (Warn, the default) or silently."""
        # the object is already in its storage form (events.k8s.io Events are stored as core Events)
        group, _, version = str(obj.get("apiVersion") or rt.api_version).rpartition("/")
        if not fieldschema.has_schema(group, version, rt.kind):
            return obj
        decoded = fieldschema.decode(group, version, rt.kind, obj)
        prefix = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
        if decoded.errors:
            raise errors.bad_request(prefix + "; ".join(decoded.errors))
        if decoded.unknown:
            if opts.field_validation == "Strict":
                listed = ", ".join(f'unknown field "{f}"' for f in decoded.unknown)
                raise errors.bad_request(f"{prefix}strict decoding error: {listed}")
            if opts.field_validation != "Ignore":
                opts.warnings.extend(f'unknown field "{f}"' for f in decoded.unknown)
        return decoded.obj

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> JsonObj:
        obj = self.store.get(rt.storage_gr, namespace if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return self.view(rt, obj)

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = 0,
        continue_token: str | None = None,
    ) -> ListResult:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector, rt.kind)
        start: tuple[str, str] | None = None
        list_rv = self.store.rv
        if continue_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                start = (str(token["ns"]), str(token["name"]))
                token_rv = int(token["rv"])
            except (ValueError, KeyError, TypeError) as exc:
                raise errors.bad_request(f"continue key is not valid: {exc}") from exc
            if token_rv < self.store.compacted_rv:
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a "
                    "new list without the continue parameter."
                )
        items: list[JsonObj] = []
        remaining = 0
        last: tuple[str, str] | None = None
        for obj in self.store.scan(rt.storage_gr, namespace if rt.namespaced else None):
            md = obj["metadata"]
            key = (md.get("namespace") or "", md["name"])
            if start is not None and key <= start:
                continue
            if labels and not labels_match(labels, obj):
                continue
            if fields and not fields_match(fields, obj):
                continue
            if limit and len(items) >= limit:
                remaining += 1
                continue
            items.append(self.view(rt, obj))
            last = key
        token = ""
        if remaining and last is not None:
            raw = json.dumps({"rv": list_rv, "ns": last[0], "name": last[1]}).encode()
            token = base64.urlsafe_b64encode(raw).decode()
        return ListResult(items, str(list_rv), token, remaining if remaining else None)

    # -- create --------------------------------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str, body: Any, opts: WriteOptions) -> JsonObj:
        obj = conversion.to_storage(rt, self._parse_body(rt, body, namespace))
        md = obj["metadata"]
        if not md.get("name") and md.get("generateName"):
            md["name"] = f"{md['generateName']}{secrets.token_hex(3)[:5]}"
        name = str(md.get("name") or "")
        obj = self._validate(rt, obj, opts)
        md = obj["metadata"]
        self._check_namespace(rt, namespace, name, creating=True)
        if self.store.get(rt.storage_gr, md.get("namespace") or "", name) is not None:
            raise errors.already_exists(rt.group, rt.plural, name)
        return self._insert(rt, obj, opts, record=True)

    def _insert(self, rt: ResourceType, obj: JsonObj, opts: WriteOptions, *, record: bool) -> JsonObj:
        md = obj["metadata"]
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            md.pop(key, None)
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now()
        if _tracks_generation(rt):
            md["generation"] = 1
        else:
            md.pop("generation", None)
        if rt.has_status and rt.kind != "Namespace" and rt.custom:
            obj.pop("status", None)
        elif rt.has_status and rt.kind in (
            "Pod",
            "Deployment",
            "DaemonSet",
            "StatefulSet",
            "ResourceClaim",
            "DeviceTaintRule",
        ):
            obj["status"] = {}
        apply_defaults(rt.kind, obj)
        self._admit(rt, obj, None)
        if record:
            md.pop("managedFields", None)
            fieldmanager.record_update(None, obj, opts.manager, rt.api_version)
        if rt.group_resource == CRD_GR:
            obj["status"] = crds.established_status(obj)
        obj["apiVersion"] = rt.storage_api_version
        if opts.dry_run:
            return self.view(rt, obj)
        stored = self.put(rt.storage_gr, obj, created=True)
        if rt.group_resource == CRD_GR:
            self._register_crd(stored)
        return self.view(rt, stored)

    # -- update --------------------------------------------------------------------------------------------------

    def existing(self, rt: ResourceType, namespace: str, name: str) -> JsonObj:
        obj = self.store.get(rt.storage_gr, namespace if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.group, rt.plural, name)
        return obj

    def update(
        self, rt: ResourceType, namespace: str, name: str, body: Any, opts: WriteOptions, subresource: str = ""
    ) -> JsonObj:
        obj = conversion.to_storage(rt, self._parse_body(rt, body, namespace))
        body_name = _meta(obj).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        _meta(obj)["name"] = name
        existing = self.existing(rt, namespace, name)
        rv = _meta(obj).get("resourceVersion")
        if rv and rv != existing["metadata"]["resourceVersion"]:
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                MODIFIED,
            )
        return self.commit(rt, existing, obj, opts, subresource, operation="Update")

    def commit(
        self,
        rt: ResourceType,
        existing: JsonObj,
        new: JsonObj,
        opts: WriteOptions,
        subresource: str,
        *,
        operation: str,
    ) -> JsonObj:
        old_md = existing["metadata"]
        if subresource == "resize":
            new = resize_update(existing, new)
        if subresource == "status":
            status = new.get("status")
            applied_fields = copy.deepcopy(_meta(new).get("managedFields"))
            new = copy.deepcopy(existing)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            if operation == "Apply":
                new["metadata"]["managedFields"] = applied_fields
        elif rt.has_status and rt.group_resource != CRD_GR:
            if "status" in existing:
                new["status"] = copy.deepcopy(existing["status"])
            else:
                new.pop("status", None)
        md = new.setdefault("metadata", {})
        for key in ("uid", "creationTimestamp", "namespace", "name", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if key in old_md:
                md[key] = old_md[key]
            else:
                md.pop(key, None)
        md["resourceVersion"] = old_md["resourceVersion"]
        if old_md.get("deletionTimestamp"):
            added = set(md.get("finalizers") or []) - set(old_md.get("finalizers") or [])
            if added:
                raise errors.invalid(
                    rt.kind,
                    rt.group,
                    md["name"],
                    [
                        (
                            "FieldValueForbidden",
                            "metadata.finalizers",
                            "Forbidden: no new finalizers can be added if the object is being deleted",
                        )
                    ],
                )
        if subresource != "status" and rt.group == "resource.k8s.io" and not rt.custom:
            prepare_dra_update(rt.kind, existing, new)
        if _tracks_generation(rt):
            md["generation"] = old_md.get("generation", 1) + (1 if _content(new) != _content(existing) else 0)
        else:
            md.pop("generation", None)
        if not md.get("labels"):
            md.pop("labels", None)
        if not md.get("annotations"):
            md.pop("annotations", None)
        if not md.get("finalizers"):
            md.pop("finalizers", None)
        if rt.group_resource == CRD_GR:
            new["status"] = crds.established_status(new)
        new["apiVersion"] = existing.get("apiVersion", rt.api_version)
        if subresource != "status":
            apply_update_defaults(rt.kind, new)
            self._admit(rt, new, existing)
        if subresource == "resize":  # `ValidatePodResize` answers a pod it cannot resize with that reason alone
            validate_update(rt, existing, new, subresource)
        new = self._validate(rt, new, opts, existing, status=subresource == "status")
        if subresource != "resize":
            validate_update(rt, existing, new, subresource)
        md = new["metadata"]
        if operation == "Update":
            md["managedFields"] = copy.deepcopy(old_md.get("managedFields") or [])
            fieldmanager.record_update(existing, new, opts.manager, rt.api_version, subresource)
        if not md.get("managedFields"):
            md.pop("managedFields", None)
        if new == existing:
            return self.view(rt, existing)
        if opts.dry_run:
            return self.view(rt, new)
        if md.get("deletionTimestamp") and not md.get("finalizers") and not md.get("deletionGracePeriodSeconds"):
            # the last finalizer went (`ShouldDeleteDuringUpdate`); a pod in its grace period waits for its kubelet
            return self.view(rt, self.remove(rt.storage_gr, new))
        stored = self.put(rt.storage_gr, new, created=False, old=existing)
        if rt.group_resource == CRD_GR:
            self._register_crd(stored)
        return self.view(rt, stored)

    # -- patch ---------------------------------------------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        opts: WriteOptions,
        subresource: str = "",
    ) -> tuple[JsonObj, bool]:
        """Apply a patch; returns (object, created) — created only for server-side apply of a new object."""
        if content_type == APPLY_PATCH:
            config = bodies.decode_yaml(raw or b"{}", "apply configuration")
            return self._server_side_apply(rt, namespace, name, config, opts, subresource)
        if content_type not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH) or (
            content_type == STRATEGIC_MERGE_PATCH and rt.custom
        ):
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}" + ("" if rt.custom else f", {STRATEGIC_MERGE_PATCH}"),
            )
        body = bodies.decode_json(raw or b"null", "patch")
        existing = self.existing(rt, namespace, name)
        current = copy.deepcopy(self.view(rt, existing))
        if content_type == JSON_PATCH:
            result = patch.json_patch(current, body)
        elif not isinstance(body, dict):
            raise errors.bad_request("patch body must be a JSON object")
        elif content_type == MERGE_PATCH:
            result = patch.merge_patch(current, body)
        else:
            result = patch.strategic_merge(current, body)
        if not isinstance(result, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        rv = _meta(result).get("resourceVersion")
        if rv and rv != existing["metadata"]["resourceVersion"]:
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                MODIFIED,
            )
        result = conversion.to_storage(rt, self._parse_body(rt, result, namespace))
        if _meta(result).get("name") != name:
            raise errors.bad_request("metadata.name cannot be changed by a patch")
        return self.commit(rt, existing, result, opts, subresource, operation="Update"), False

    def _server_side_apply(
        self, rt: ResourceType, namespace: str, name: str, config: Any, opts: WriteOptions, subresource: str
    ) -> tuple[JsonObj, bool]:
        if not isinstance(config, dict):
            raise errors.bad_request("the applied configuration must be an object")
        if not opts.manager or opts.manager == "unknown":
            raise errors.bad_request(
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
            )
        config = self._parse_body(rt, config, namespace)
        cfg_name = _meta(config).get("name")
        if cfg_name and cfg_name != name:
            raise errors.bad_request(f"the name of the object ({cfg_name}) does not match the name on the URL ({name})")
        _meta(config)["name"] = name
        existing = self.store.get(rt.storage_gr, namespace if rt.namespaced else "", name)
        if existing is None:
            if subresource:
                raise errors.not_found(rt.group, rt.plural, name)
            self._check_namespace(rt, namespace, name, creating=True)
            merged = fieldmanager.apply(None, config, opts.manager, force=opts.force, api_version=rt.api_version)
            obj = self._validate(rt, conversion.to_storage(rt, merged), opts)
            return self._insert(rt, obj, opts, record=False), True
        rv = _meta(config).get("resourceVersion")
        if rv and rv != existing["metadata"]["resourceVersion"]:
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                MODIFIED,
            )
        _meta(config).pop("resourceVersion", None)
        live = self.view(rt, existing)
        try:
            merged = fieldmanager.apply(
                live, config, opts.manager, force=opts.force, api_version=rt.api_version, subresource=subresource
            )
        except fieldmanager.ApplyConflict as conflict:
            if opts.manager != "kubectl" or not fieldmanager.upgrade_conflicts_allowed(live, conflict.conflicts):
                raise
            merged = fieldmanager.apply(
                live, config, opts.manager, force=True, api_version=rt.api_version, subresource=subresource
            )
        merged = conversion.to_storage(rt, merged)
        return self.commit(rt, existing, merged, opts, subresource, operation="Apply"), False

    # -- delete --------------------------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: JsonObj,
        opts: WriteOptions,
    ) -> JsonObj:
        existing = self.existing(rt, namespace, name)
        pre = options.get("preconditions") or {}
        md = existing["metadata"]
        if pre.get("uid") and pre["uid"] != md.get("uid"):
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {md.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != md.get("resourceVersion"):
            raise errors.conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {md.get('resourceVersion')}",
            )
        propagation = options.get("propagationPolicy") or (
            "Orphan" if options.get("orphanDependents") else "Background"
        )
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise errors.invalid(
                "DeleteOptions",
                "",
                "",
                [("FieldValueNotSupported", "propagationPolicy", f'Unsupported value: "{propagation}"')],
            )
        if opts.dry_run:
            graceful = before_delete(existing, options) if rt.storage_gr == POD_GR else None
            if graceful is None or graceful.action != "mark":
                return self.view(rt, existing)
            return self.view(rt, {**existing, "metadata": {**md, **graceful.metadata}})
        return self.view(rt, self.gc.delete(rt.storage_gr, existing, propagation, options))

    # -- CRDs ----------------------------------------------------------------------------------------------------

    def _register_crd(self, crd: JsonObj) -> None:
        spec = crd.get("spec") or {}
        if (spec.get("group"), (spec.get("names") or {}).get("plural")) in BUILTIN_RESOURCES:
            return
        self.registry.remove_group_resource(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        for rt in crds.resource_types(crd):
            self.registry.add(rt)

    def _unregister_crd(self, crd: JsonObj) -> None:
        spec = crd.get("spec") or {}
        group = spec.get("group", "")
        plural = (spec.get("names") or {}).get("plural", "")
        gr = (group, plural)
        if gr in BUILTIN_RESOURCES:
            return  # never registered (see `crdvalidation`): the built-in type and its objects stay
        for obj in list(self.store.scan(gr)):
            self.remove(gr, obj)
        self.registry.remove_group_resource(group, plural)
        self.store.drop_group_resource(gr)
