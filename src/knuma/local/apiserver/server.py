"""`ApiServer`: the store, the object rules and the HTTP app put together, startable on any event loop.

Typical use::

    server = ApiServer(token="s3cret")
    await server.start("127.0.0.1", 0)
    print(server.url)           # http://127.0.0.1:41234
    server.register_node_proxy("node-a", handler)
    ...
    await server.stop()

`knuma.testing.apiserver` wraps this for tests (in a background thread or as a subprocess).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from aiohttp import web

from knuma.local.apiserver import datadir, kubeconfig, tls
from knuma.local.apiserver.app import build_app
from knuma.local.apiserver.authn import TokenAuthenticator, UserInfo
from knuma.local.apiserver.connections import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PREAUTH_TIMEOUT,
    ConnectionGuard,
    GuardedSite,
)
from knuma.local.apiserver.durable import SqliteBackend
from knuma.local.apiserver.loader import LoadedObject, Manifest, load_objects
from knuma.local.apiserver.proxy import NodeProxyRegistry, ProxyHandler
from knuma.local.apiserver.resources import Registry
from knuma.local.apiserver.rest import ObjectService
from knuma.local.apiserver.store import DEFAULT_WINDOW_BYTES, DEFAULT_WINDOW_EVENTS, Backend, Store
from knuma.manifests import UnreadableFile, read_user_file

log = logging.getLogger("knuma.local.apiserver")


def generate_token() -> str:
    return secrets.token_urlsafe(32)


def persistent_token(data_dir: Path) -> str:
    """The token kept in DIR/token (created, readable only by its owner, on first use), so kubeconfigs written
    earlier keep working after a restart of `knuma apiserver --data-dir DIR` or `knuma up --data-dir DIR`."""
    path = data_dir / "token"
    if path.exists():
        try:
            return read_user_file(path).strip()
        except UnreadableFile as err:
            raise datadir.DataDirError(
                f"{path} is not the token knuma keeps there ({err.cause}): move it aside to have a new one generated "
                "(kubeconfigs written with the old one then stop working; knuma does not delete or overwrite it), or "
                "give another --data-dir"
            ) from None
    datadir.make_directory(data_dir)
    token = generate_token()
    path.touch(mode=0o600)
    path.write_text(token + "\n")
    return token


class ApiServer:
    def __init__(
        self,
        *,
        token: str | None = None,
        static_tokens: Mapping[str, UserInfo] | None = None,
        data_dir: Path | None = None,
        fsync: bool = False,
        watch_window: int = DEFAULT_WINDOW_EVENTS,
        watch_window_bytes: int = DEFAULT_WINDOW_BYTES,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        preauth_timeout: float = DEFAULT_PREAUTH_TIMEOUT,
        watch_queue_size: int = 10000,
        watch_timeout: float = 1800.0,
        bookmark_interval: float = 5.0,
        watch_write_timeout: float = 60.0,
    ) -> None:
        """`token=None` disables authentication and TLS (`--insecure`): kubectl sends bearer tokens only over HTTPS,
        so an authenticated server serves HTTPS with a self-signed certificate (kept in `data_dir` when given, so
        kubeconfigs stay valid across restarts). `data_dir` also enables durability."""
        self.token = token
        self.authenticator = TokenAuthenticator(token, static_tokens)
        """The server token and `static_tokens` (`--token-auth-file`) to users; see `authn`."""
        self.ca_pem: str | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.data_dir = data_dir
        backend: Backend | None = SqliteBackend(data_dir, fsync=fsync) if data_dir is not None else None
        self.registry = Registry.with_builtins()
        self.store = Store(backend, window=watch_window, window_bytes=watch_window_bytes)
        self.connections = ConnectionGuard(max_connections, preauth_timeout)
        self.service = ObjectService(self.store, self.registry, self._defer)
        self.node_proxy = NodeProxyRegistry()
        self.watch_queue_size = watch_queue_size
        self.watch_timeout = watch_timeout
        self.bookmark_interval = bookmark_interval
        self.watch_write_timeout = watch_write_timeout
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self.host = "127.0.0.1"
        self.port = 0

    def _defer(self, fn: Callable[[], None]) -> None:
        """Run `fn` soon on the loop (garbage collection and namespace cleanup happen after the response)."""

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("background cleanup failed")

        try:
            asyncio.get_running_loop().call_soon(run)
        except RuntimeError:
            run()

    @property
    def url(self) -> str:
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        host = f"[{host}]" if ":" in host else host
        scheme = "https" if self.token is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    def kubeconfig(self) -> str:
        return kubeconfig.render(self.url, self.token, ca_pem=self.ca_pem)

    def write_kubeconfig(self, path: Path) -> Path:
        return kubeconfig.write(path, self.url, self.token, ca_pem=self.ca_pem)

    def register_node_proxy(self, node: str, handler: ProxyHandler) -> None:
        """Serve `/api/v1/nodes/{node}/proxy/...` with `handler` (a simulated kubelet)."""
        self.node_proxy.register(node, handler)

    def unregister_node_proxy(self, node: str) -> None:
        self.node_proxy.unregister(node)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.service.ensure_system_namespaces()
        self.service.ensure_system_priority_classes()
        self.service.resume_pending()
        ssl_context = None
        if self.token is not None:  # before anything listens: a data dir's certificate may be unusable
            if self.data_dir is not None:
                cert_dir = self.data_dir
            else:
                self._tmp = tempfile.TemporaryDirectory(prefix="knuma-apiserver-tls-")
                cert_dir = Path(self._tmp.name)
            self.ca_pem, ssl_context = tls.serving(cert_dir, ["localhost", "127.0.0.1", "::1", host])
        if self.data_dir is not None:
            datadir.secure(self.data_dir)
        app = build_app(self)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        assert self._runner.server is not None
        self.connections.install(self._runner.server)
        self._site = GuardedSite(
            self._runner,
            host,
            port,
            reuse_address=True,
            ssl_context=ssl_context,
            handshake_timeout=self.connections.preauth_timeout,
        )
        await self._site.start()
        server = self._site._server
        assert isinstance(server, asyncio.base_events.Server)
        sockname = server.sockets[0].getsockname()
        self.host = host
        self.port = int(sockname[1])
        log.debug("knuma apiserver listening on %s", self.url)

    def load(self, manifests: Sequence[Manifest]) -> list[LoadedObject]:
        """Create (or replace) objects read by `loader.read_manifests`; raises `LoadError` on the first failure."""
        self.service.ensure_system_namespaces()
        self.service.ensure_system_priority_classes()
        return load_objects(self.service, manifests)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


async def serve_forever(
    server: ApiServer,
    host: str,
    port: int,
    on_ready: Callable[[ApiServer], None],
    manifests: Sequence[Manifest] = (),
) -> None:
    """Start `server`, create `manifests`, call `on_ready`, and run until SIGINT/SIGTERM."""
    import signal

    await server.start(host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        for loaded in server.load(manifests):
            log.info("loaded %s: %s", loaded.manifest.describe, loaded.action)
        on_ready(server)
        await stop.wait()
    finally:
        await server.stop()
