"""HTTP layer: the aiohttp application that maps Kubernetes REST paths to `ObjectService` calls.

Paths are parsed by hand (not with one route per resource) because resources appear at runtime when CRDs are
created: `/api/v1/...` and `/apis/{group}/{version}/...`, cluster-scoped or under `namespaces/{ns}/`, with
an optional subresource (`status`, `binding`, `proxy/...`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from knuma.api.types import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, JsonObj, go_json_type
from knuma.local.apiserver import bodies, discovery, errors, eviction, protobuf, reviews, subresources, tables, watch
from knuma.local.apiserver.authn import TokenAuthenticator, is_privileged
from knuma.local.apiserver.connections import ConnectionGuard
from knuma.local.apiserver.proxy import NodeProxyRegistry, ProxyRequest
from knuma.local.apiserver.resources import Registry, ResourceType
from knuma.local.apiserver.rest import ObjectService, WriteOptions
from knuma.local.apiserver.selectors import parse_field_selector, parse_label_selector
from knuma.local.apiserver.store import Store


class ApiServer(Protocol):
    """What the HTTP handlers need of the server (`knuma.local.apiserver.server.ApiServer` is one)."""

    token: str | None
    authenticator: TokenAuthenticator
    registry: Registry
    store: Store
    service: ObjectService
    node_proxy: NodeProxyRegistry
    watch_queue_size: int
    watch_timeout: float
    bookmark_interval: float
    watch_write_timeout: float
    connections: ConnectionGuard


log = logging.getLogger("knuma.local.apiserver")

OPENAPI_V2_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2"
_PUBLIC = frozenset({"/healthz", "/readyz", "/livez"})
_BODY_TYPES = frozenset({"application/json", "application/yaml", "text/yaml", "application/x-yaml"})
SERVER_KEY: web.AppKey[ApiServer] = web.AppKey("server")


def _json(body: JsonObj, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(), status=status, content_type="application/json"
    )


def _error(err: errors.ApiError) -> web.Response:
    return _json(err.status(), err.code)


WARNINGS_KEY: web.RequestKey[list[str]] = web.RequestKey("warnings", list)
"""Request key: warnings a write produced, sent back as `Warning` headers."""


@web.middleware
async def _middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    server = request.app[SERVER_KEY]
    if server.token is not None and request.path not in _PUBLIC:
        # The scheme is case-insensitive (RFC 7235), as kube-apiserver's bearer token authenticator reads it.
        scheme, _, supplied = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            supplied = ""
        user = server.authenticator.authenticate(supplied.strip())
        if user is None:
            return _error(errors.unauthorized())
        if not is_privileged(user.username, user.groups):  # no RBAC here: see `authn`
            return _error(errors.forbidden(user.username, request.method, request.path))
    server.connections.authenticated(request.transport)
    started = time.perf_counter()
    try:
        response = await handler(request)
    except errors.ApiError as err:
        response = _error(err)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("internal error serving %s %s", request.method, request.path_qs)
        response = _error(errors.ApiError(500, "InternalError", "an internal error occurred; see the server log"))
    for warning in request.get(WARNINGS_KEY) or ():
        # RFC 7234 warn-code 299, as kube-apiserver writes them (kubectl prints "Warning: <text>")
        response.headers.add("Warning", '299 - "' + warning.replace("\\", "\\\\").replace('"', '\\"') + '"')
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s %s -> %s in %.1f ms (%s)",
            request.method,
            request.path_qs,
            response.status,
            (time.perf_counter() - started) * 1000,
            request.headers.get("User-Agent", "-"),
        )
    return response


@dataclass(frozen=True)
class Target:
    rt: ResourceType
    namespace: str | None  # None: all namespaces (or cluster-scoped)
    name: str | None
    subresource: str
    proxy_path: str = ""


def _resolve(server: ApiServer, group: str, version: str, segments: list[str]) -> Target:
    reg = server.registry
    if not segments:
        raise errors.resource_not_found()
    namespace: str | None = None
    if segments[0] == "namespaces" and len(segments) >= 3 and segments[2] not in ("status", "finalize"):
        namespace = segments[1]
        segments = segments[2:]
    rt = reg.get(group, version, segments[0])
    if rt is None:
        raise errors.resource_not_found()
    if namespace is not None and not rt.namespaced:
        raise errors.resource_not_found()
    name = segments[1] if len(segments) > 1 else None
    sub = segments[2] if len(segments) > 2 else ""
    proxy_path = ""
    if sub == "proxy":
        proxy_path = "/".join(segments[3:])
    elif len(segments) > 3 or (sub and sub not in rt.subresources):
        raise errors.resource_not_found()
    if rt.namespaced and namespace is None and name is not None:
        raise errors.resource_not_found()
    return Target(rt, namespace, name, sub, proxy_path)


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    if not raw:
        raise errors.bad_request("the request body is empty")
    # No Content-Type is JSON, as kube-apiserver negotiates it (`kubectl create --raw -f` sends none).
    ctype = request.content_type if request.headers.get("Content-Type") else "application/json"
    if ctype == protobuf.CONTENT_TYPE:
        return protobuf.decode(raw)
    if ctype not in _BODY_TYPES:
        raise errors.unsupported_media_type(ctype)
    if "yaml" in ctype:
        return bodies.decode_yaml(raw)
    return bodies.decode_json(raw)


def _manager(request: web.Request) -> str:
    manager = request.query.get("fieldManager")
    if manager:
        return manager
    agent = request.headers.get("User-Agent", "unknown")
    return agent.split("/", 1)[0] or "unknown"


def _write_opts(request: web.Request, *, explicit_manager: bool = False) -> WriteOptions:
    dry = request.query.get("dryRun", "")
    if dry and dry != "All":
        raise errors.bad_request(f'Unsupported value: "{dry}": supported values: "All"')
    manager = request.query.get("fieldManager", "") if explicit_manager else _manager(request)
    force = _query_flag(request.query, "force")
    validation = request.query.get("fieldValidation", "")
    if validation not in ("", "Ignore", "Warn", "Strict"):
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{validation}": supported values: "Ignore", "Strict", "Warn"'
        )
    warnings: list[str] = request.setdefault(WARNINGS_KEY, [])
    return WriteOptions(manager=manager, dry_run=bool(dry), force=force, field_validation=validation, warnings=warnings)


def _list_body(rt: ResourceType, items: list[JsonObj], rv: str, token: str, remaining: int | None) -> bytes:
    md: JsonObj = {"resourceVersion": rv}
    if token:
        md["continue"] = token
    if remaining is not None:
        md["remainingItemCount"] = remaining
    head = json.dumps({"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": md}, separators=(",", ":"))
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    return (head[:-1] + ',"items":[' + ",".join(dumps(i) for i in items) + "]}").encode()


class Handlers:
    def __init__(self, server: ApiServer) -> None:
        self.server = server

    # -- non-resource endpoints ---------------------------------------------------------------------------------

    async def version(self, request: web.Request) -> web.Response:
        return _json(discovery.version())

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def openapi_v2(self, request: web.Request) -> web.Response:
        # kubectl parses whatever it gets as protobuf; an empty body is a valid (empty) document.
        return web.Response(body=b"", headers={"Content-Type": OPENAPI_V2_CONTENT_TYPE})

    async def not_found(self, request: web.Request) -> web.Response:
        return _error(errors.resource_not_found())

    async def core(self, request: web.Request) -> web.Response:
        return _json(discovery.core_versions(f"{request.host}"))

    async def groups(self, request: web.Request) -> web.Response:
        return _json(discovery.group_list(self.server.registry))

    async def group(self, request: web.Request) -> web.Response:
        doc = discovery.group(self.server.registry, request.match_info["group"])
        if doc is None:
            raise errors.resource_not_found()
        return _json(doc)

    async def resource_list(self, request: web.Request, group: str, version: str) -> web.Response:
        doc = discovery.resource_list(self.server.registry, group, version)
        if doc is None:
            raise errors.resource_not_found()
        return _json(doc)

    async def token_review(self, request: web.Request) -> web.Response:
        return _json(reviews.review_token(self.server.authenticator, await _body(request)), 201)

    async def access_review(self, request: web.Request) -> web.Response:
        return _json(reviews.review_access(await _body(request)), 201)

    # -- resources ----------------------------------------------------------------------------------------------

    async def core_resource(self, request: web.Request) -> web.StreamResponse:
        tail = request.match_info.get("tail", "")
        if not tail:
            return await self.resource_list(request, "", "v1")
        return await self.resource(request, "", "v1", tail)

    async def group_resource(self, request: web.Request) -> web.StreamResponse:
        group, version = request.match_info["group"], request.match_info["version"]
        tail = request.match_info.get("tail", "")
        if not tail:
            return await self.resource_list(request, group, version)
        return await self.resource(request, group, version, tail)

    async def resource(self, request: web.Request, group: str, version: str, tail: str) -> web.StreamResponse:
        segments = list(tail.split("/"))
        if segments and segments[-1] == "" and len(segments) > 1:
            segments = segments[:-1]
        target = _resolve(self.server, group, version, segments)
        service = self.server.service
        method = request.method
        rt = target.rt
        ns = target.namespace or ""
        if target.subresource == "proxy":
            return await self.node_proxy(request, target)
        if method == "GET":
            _check_read_query(request.query)
        if target.name is None:
            if method == "GET":
                if _query_flag(request.query, "watch"):
                    return await self.watch(request, target)
                result = service.list_objects(
                    rt,
                    target.namespace,
                    label_selector=request.query.get("labelSelector"),
                    field_selector=request.query.get("fieldSelector"),
                    limit=_int(request.query.get("limit"), "limit"),
                    continue_token=request.query.get("continue"),
                )
                if tables.wants_table(request.headers.get("Accept", "")):
                    md: JsonObj = {"resourceVersion": result.resource_version}
                    if result.continue_token:
                        md["continue"] = result.continue_token
                    if result.remaining is not None:
                        md["remainingItemCount"] = result.remaining
                    return _json(self._table(request, rt, result.items, md))
                body = _list_body(rt, result.items, result.resource_version, result.continue_token, result.remaining)
                return web.Response(body=body, content_type="application/json")
            if method == "POST":
                if rt.namespaced and target.namespace is None:
                    raise errors.method_not_allowed()
                obj = service.create(rt, ns, await _body(request), _write_opts(request))
                return _json(obj, 201)
            if method == "DELETE":
                return await self.delete_collection(request, target)
            raise errors.method_not_allowed()
        name = target.name
        if target.subresource == "binding":
            if method != "POST":
                raise errors.method_not_allowed()
            return _json(subresources.bind(service, ns, name, await _body(request), _write_opts(request)), 201)
        if target.subresource == "eviction":
            if method != "POST":
                raise errors.method_not_allowed()
            answer, code = eviction.evict(service, ns, name, await _body(request), _write_opts(request))
            return _json(answer, code)
        if target.subresource == "scale":
            return await self.scale(request, target)
        sub = target.subresource if target.subresource in ("status", "resize") else ""
        if method == "GET":
            obj = service.get(rt, ns, name)
            if not sub and tables.wants_table(request.headers.get("Accept", "")):
                return _json(self._table(request, rt, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}))
            return _json(obj)
        if method == "PUT":
            return _json(service.update(rt, ns, name, await _body(request), _write_opts(request), sub))
        if method == "PATCH":
            ctype = request.content_type
            raw = await request.read()
            opts = _write_opts(request, explicit_manager=ctype == APPLY_PATCH)
            obj, created = service.patch(rt, ns, name, ctype, raw, opts, sub)
            return _json(obj, 201 if created else 200)
        if method == "DELETE":
            raw = await request.read()
            options: JsonObj = {}
            if raw and request.content_type == protobuf.CONTENT_TYPE:
                options = protobuf.decode(raw)
            elif raw:
                loaded = bodies.decode_json(raw, "DeleteOptions")
                if not isinstance(loaded, dict):
                    got = go_json_type(loaded)
                    raise errors.bad_request(f"json: cannot unmarshal {got} into Go value of type v1.DeleteOptions")
                options = loaded
            options = _delete_query(request, options)
            obj = service.delete(rt, ns, name, options, _write_opts(request))
            gone = service.store.get(rt.storage_gr, ns if rt.namespaced else "", name) is None
            # 202 only when the object stays and the client asked for cascading with `orphanDependents: false`; a
            # pod in its grace period or an object held by finalizers answers 200 (handlers/delete.go, "that will
            # break existing clients")
            return _json(obj, 202 if not gone and options.get("orphanDependents") is False else 200)
        raise errors.method_not_allowed()

    async def scale(self, request: web.Request, target: Target) -> web.Response:
        service = self.server.service
        ns, name = target.namespace or "", target.name or ""
        if request.method == "GET":
            return _json(subresources.get_scale(service, target.rt, ns, name))
        if request.method == "PUT":
            return _json(
                subresources.update_scale(
                    service, target.rt, ns, name, None, await _body(request), _write_opts(request)
                )
            )
        if request.method == "PATCH":
            ctype = request.content_type
            if ctype not in (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH):
                raise errors.unsupported_media_type(ctype)
            body = bodies.decode_json(await request.read(), "patch")
            return _json(subresources.update_scale(service, target.rt, ns, name, ctype, body, _write_opts(request)))
        raise errors.method_not_allowed()

    def _table(self, request: web.Request, rt: ResourceType, items: list[JsonObj], md: JsonObj) -> JsonObj:
        columns = tables.columns_for(rt, list(rt.printer_columns))
        include = request.query.get("includeObject", "Metadata")
        return tables.table(columns, items, md, include=include)

    async def delete_collection(self, request: web.Request, target: Target) -> web.Response:
        service = self.server.service
        rt = target.rt
        result = service.list_objects(
            rt,
            target.namespace,
            label_selector=request.query.get("labelSelector"),
            field_selector=request.query.get("fieldSelector"),
        )
        opts = _write_opts(request)
        options = _delete_query(request, {"propagationPolicy": "Background"})
        deleted = []
        for obj in result.items:
            md = obj["metadata"]
            deleted.append(service.delete(rt, md.get("namespace", ""), md["name"], options, opts))
        body = _list_body(rt, deleted, str(service.store.rv), "", None)
        return web.Response(body=body, content_type="application/json")

    async def watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        q = request.query
        rt = target.rt
        server = self.server
        timeout = q.get("timeoutSeconds")
        watcher = watch.Watcher(
            rt.storage_gr,
            target.namespace,
            parse_label_selector(q.get("labelSelector")),
            parse_field_selector(q.get("fieldSelector"), rt.kind),
            queue_size=server.watch_queue_size,
        )
        opts = watch.WatchOptions(
            resource_version=q.get("resourceVersion", ""),
            timeout_seconds=float(_int(timeout, "timeoutSeconds")) if timeout else server.watch_timeout,
            bookmarks=_query_flag(q, "allowWatchBookmarks"),
            send_initial_events=_query_flag(q, "sendInitialEvents"),
            bookmark_interval=server.bookmark_interval,
            queue_size=server.watch_queue_size,
            write_timeout=server.watch_write_timeout,
        )
        if tables.wants_table(request.headers.get("Accept", "")):
            columns = tables.columns_for(rt, list(rt.printer_columns))
            include = q.get("includeObject", "Metadata")
            opts.render = lambda obj: tables.table(columns, [obj], {}, include=include)
        return await watch.serve(request, server.store, rt, watcher, opts)

    async def node_proxy(self, request: web.Request, target: Target) -> web.Response:
        name = target.name or ""
        if target.rt.plural != "nodes" or not name:
            raise errors.resource_not_found()
        self.server.service.get(target.rt, "", name)
        handler = self.server.node_proxy.get(name)
        if handler is None:
            raise errors.ApiError(
                503,
                "ServiceUnavailable",
                f'no proxy handler for node "{name}": this knuma apiserver forwards node proxy requests only to nodes '
                "that registered a handler (ApiServer.register_node_proxy), such as simulated nodes of `knuma up`",
            )
        proxied = ProxyRequest(
            method=request.method,
            path="/" + target.proxy_path,
            query=request.query_string,
            headers={k: v for k, v in request.headers.items() if k.lower() != "authorization"},
            body=await request.read(),
        )
        reply = await self.server.node_proxy.call(handler, proxied)
        return web.Response(body=reply.body, status=reply.status, headers={"Content-Type": reply.content_type})


def _delete_query(request: web.Request, options: JsonObj) -> JsonObj:
    """DeleteOptions given as query parameters override the body's (`metav1.ParameterCodec` decodes both into one
    DeleteOptions): `propagationPolicy`, `gracePeriodSeconds` (negative allowed: it means 1 s) and
    `orphanDependents`."""
    query = request.query
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "gracePeriodSeconds" in query:
        try:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        except ValueError as exc:
            raise errors.bad_request(f"invalid value for gracePeriodSeconds: {query['gracePeriodSeconds']!r}") from exc
    if "orphanDependents" in query:
        options["orphanDependents"] = _query_flag(query, "orphanDependents")
    return options


def _query_flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean query parameter as kube-apiserver's parameter codec reads it (`Convert_Slice_string_To_bool`):
    absent, `0` or `false` (any case) is false, anything else true, `?watch=yes` and an empty `?force=` included."""
    if name not in query:
        return False
    value = query[name]
    return not (value == "0" or value.lower() == "false")


def _check_read_query(query: Mapping[str, str]) -> None:
    """A get's, a list's or a watch's `resourceVersion` is a number (`APIObjectVersioner.ParseResourceVersion`) and
    its `timeoutSeconds` a whole number of seconds; kube-apiserver answers 400 to anything else, where ignoring it
    would serve a different read than the one asked for."""
    rv = query.get("resourceVersion", "")
    if rv and not (rv.isascii() and rv.isdigit()):
        raise errors.bad_request(f"invalid resource version: {rv!r}")
    _int(query.get("timeoutSeconds"), "timeoutSeconds")


def _int(value: str | None, name: str) -> int:
    if not value:
        return 0
    try:
        number = int(value)
    except ValueError as exc:
        raise errors.bad_request(f"invalid value for {name}: {value!r}") from exc
    if number < 0:
        raise errors.bad_request(f"{name} must not be negative")
    return number


def build_app(server: ApiServer) -> web.Application:
    app = web.Application(middlewares=[_middleware], client_max_size=3 * 1024 * 1024)
    app[SERVER_KEY] = server
    h = Handlers(server)
    app.router.add_get("/version", h.version)
    app.router.add_get("/version/", h.version)
    for path in _PUBLIC:
        app.router.add_get(path, h.health)
    app.router.add_get("/openapi/v2", h.openapi_v2)
    app.router.add_route("*", "/openapi/v3{tail:.*}", h.not_found)
    app.router.add_get("/api", h.core)
    app.router.add_get("/api/", h.core)
    app.router.add_get("/apis", h.groups)
    app.router.add_get("/apis/", h.groups)
    app.router.add_route("*", "/api/v1", h.core_resource)
    app.router.add_route("*", "/api/v1/{tail:.*}", h.core_resource)
    app.router.add_post(reviews.TOKENREVIEW_PATH, h.token_review)
    app.router.add_post(reviews.SAR_PATH, h.access_review)
    app.router.add_get("/apis/{group}", h.group)
    app.router.add_get("/apis/{group}/", h.group)
    app.router.add_route("*", "/apis/{group}/{version}", h.group_resource)
    app.router.add_route("*", "/apis/{group}/{version}/{tail:.*}", h.group_resource)
    app.router.add_route("*", "/{tail:.*}", h.not_found)
    return app
