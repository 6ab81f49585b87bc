"""Start a `knuma apiserver` for a test: in-process on a background thread, or as a subprocess.

Both yield a `RunningApiServer` with the URL, the bearer token and a kubeconfig file, so a test drives it with
kubectl, lightkube or kopf exactly as it would a real cluster::

    with apiserver_in_thread(tmp_path) as api:
        subprocess.run(["kubectl", "--kubeconfig", str(api.kubeconfig), "get", "ns"], check=True)

Servers bind 127.0.0.1 on a free port and are always stopped on exit (the subprocess is killed if it does not stop
within a few seconds), so a failing test never leaks one.

A fixture for another test suite's `conftest.py`::

    @pytest.fixture
    def apiserver(tmp_path):
        with apiserver_in_thread(tmp_path) as api:   # or apiserver_process(tmp_path) for a real `knuma apiserver`
            yield api

    def test_something(apiserver):
        client = lightkube.Client(KubeConfig.from_file(apiserver.kubeconfig))

The in-process variant also exposes the `ApiServer` (`api.server`, e.g. `api.register_node_proxy(...)`) and runs
code on its event loop with `api.call(fn)`; options such as `bookmark_interval=0.2` or `watch_window=100` go to
`ApiServer(...)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from knuma.local.apiserver.proxy import ProxyHandler
from knuma.local.apiserver.server import ApiServer, generate_token

T = TypeVar("T")


@dataclass
class RunningApiServer:
    url: str
    token: str | None
    kubeconfig: Path
    #: The in-process server (None for a subprocess); use `call` to touch it from the test thread.
    server: ApiServer | None = None
    process: subprocess.Popen[bytes] | None = None
    loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def register_node_proxy(self, node: str, handler: ProxyHandler) -> None:
        if self.server is None:
            raise RuntimeError("node proxy handlers can only be registered on an in-process server")
        self.server.register_node_proxy(node, handler)

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run `fn` on the server's event loop (the store is not thread-safe) and return its result."""
        if self.loop is None:
            raise RuntimeError("only an in-process server can be called directly")

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def run(self, coro: Awaitable[T], timeout: float = 30.0) -> T:
        if self.loop is None:
            raise RuntimeError("only an in-process server can run coroutines")

        async def wrap() -> T:
            return await coro

        return asyncio.run_coroutine_threadsafe(wrap(), self.loop).result(timeout)


def _workdir(directory: Path | None, stack: contextlib.ExitStack) -> Path:
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
        return directory
    return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="knuma-apiserver-")))


@contextlib.contextmanager
def apiserver_in_thread(
    directory: Path | None = None,
    *,
    insecure: bool = False,
    data_dir: Path | None = None,
    start_timeout: float = 10.0,
    **options: Any,
) -> Iterator[RunningApiServer]:
    """Run an `ApiServer` on its own event loop in a daemon thread; `options` go to `ApiServer(...)`."""
    with contextlib.ExitStack() as stack:
        work = _workdir(directory, stack)
        token = None if insecure else generate_token()
        loop = asyncio.new_event_loop()
        started: Future[ApiServer] = Future()
        stopping = asyncio.Event()

        async def main() -> None:
            try:
                server = ApiServer(token=token, data_dir=data_dir, **options)
                await server.start("127.0.0.1", 0)
            except BaseException as exc:
                started.set_exception(exc)
                return
            started.set_result(server)
            try:
                await stopping.wait()
            finally:
                await server.stop()

        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), name="knuma-apiserver", daemon=True)
        thread.start()
        try:
            server = started.result(start_timeout)
            path = server.write_kubeconfig(work / "kubeconfig")
            yield RunningApiServer(server.url, token, path, server=server, loop=loop)
        finally:
            loop.call_soon_threadsafe(stopping.set)
            thread.join(10)
            if not thread.is_alive():
                loop.close()


def _python_command() -> list[str]:
    return [sys.executable, "-m", "knuma", "apiserver"]


@contextlib.contextmanager
def apiserver_process(
    directory: Path | None = None,
    *,
    insecure: bool = False,
    data_dir: Path | None = None,
    port: int = 0,
    extra_args: list[str] | None = None,
    start_timeout: float = 20.0,
) -> Iterator[RunningApiServer]:
    """Run `python -m knuma apiserver` as a subprocess; stderr goes to a log file
    in `directory` (`apiserver.log`), which the error message points at when it fails to start."""
    with contextlib.ExitStack() as stack:
        work = _workdir(directory, stack)
        kubeconfig = work / "kubeconfig"
        kubeconfig.unlink(missing_ok=True)
        args = [*_python_command(), "--port", str(port), "--bind", "127.0.0.1", "--kubeconfig-out", str(kubeconfig)]
        if insecure:
            args.append("--insecure")
        if data_dir is not None:
            args += ["--data-dir", str(data_dir)]
        args += extra_args or []
        log = (work / "apiserver.log").open("ab")
        stack.callback(log.close)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("KNUMA_APISERVER_TOKEN", None)
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
        try:
            deadline = time.monotonic() + start_timeout
            while not kubeconfig.exists():
                if proc.poll() is not None:
                    raise RuntimeError(f"knuma apiserver exited with {proc.returncode}; see {work / 'apiserver.log'}")
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"knuma apiserver did not start in {start_timeout}s; see {work / 'apiserver.log'}"
                    )
                time.sleep(0.02)
            config = yaml.safe_load(kubeconfig.read_text())
            url = config["clusters"][0]["cluster"]["server"]
            token = config["users"][0]["user"].get("token")
            yield RunningApiServer(url, token, kubeconfig, process=proc)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
