"""Load a page in a real headless Chromium and report what a user would see: console errors, images, text, pixels.

Why a real browser: an HTML report can be "written" and still be broken for its reader (an image path that does not
resolve, a script error, a blank page); only a browser says so. The driver speaks the Chrome DevTools Protocol over
a websocket (aiohttp, already a dependency) to a Chromium started with `--remote-debugging-port=0`; the port is read
from `DevToolsActivePort` in its private `--user-data-dir`::

    check = await load_page(page.as_uri())
    assert not check.console_errors and all(image.natural_width > 0 for image in check.images)

Chromium is started with the flags that keep it off the network (no background networking, component updates, sync
or QUIC: without them it keeps trying to reach Google), in its own process group, which is the only thing killed at
the end. Timeouts are generous: CI machines are loaded.

Chromium is not a Python package: `find_chromium` looks at `KNUMA_CHROMIUM`, then `chromium`, `chromium-browser`,
`google-chrome` on PATH, and otherwise raises `BrowserMissing` saying how to install it (`make test` installs
Debian's `chromium` when it can).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from knuma.errors import OperationFailed
from knuma.kube.tasks import cancel_and_wait
from knuma.testing.processes import stop_group

__all__ = [
    "BrowserFailed",
    "BrowserMissing",
    "ImageState",
    "PageCheck",
    "Pixels",
    "find_chromium",
    "load_page",
    "pixels",
]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = (
    "install Chromium: `apt-get install -y --no-install-recommends chromium` as root on Debian/Ubuntu (`make test` "
    "does this when it can), or set KNUMA_CHROMIUM to a Chrome/Chromium binary"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)


class BrowserMissing(OperationFailed):
    """No Chromium to run; the message says how to install one."""


class BrowserFailed(OperationFailed):
    """Chromium did not start, did not answer, or could not load the page; the message has its last log lines."""


@dataclass(frozen=True)
class ImageState:
    src: str
    complete: bool
    natural_width: int
    natural_height: int


@dataclass
class PageCheck:
    url: str
    title: str = ""
    text: str = ""
    """`document.body.innerText`: table cells separated by tabs, rows by newlines."""
    images: list[ImageState] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    """`console.error` calls, uncaught exceptions and the browser's own errors (e.g. a resource that failed to load)."""
    screenshot: bytes = b""
    """PNG of the whole page."""


@dataclass(frozen=True)
class Pixels:
    """What a screenshot holds, in numbers a test can bound: a blank page has a handful of colours, all near white."""

    width: int
    height: int
    colours: int
    """Distinct RGB colours."""
    inked: float
    """Share of pixels that are not (near) white: text, lines, fills."""
    coloured: float
    """Share of saturated pixels (not grey): plot lines, heat map cells."""


def pixels(png: bytes) -> Pixels:
    """Decode a PNG screenshot (matplotlib's reader, so no extra dependency) and measure it."""
    from matplotlib.image import imread

    rgb = np.round(imread(io.BytesIO(png), format="png")[:, :, :3] * 255).astype(np.uint8)
    height, width = rgb.shape[:2]
    colours = len(np.unique(rgb.reshape(-1, 3), axis=0))
    inked = float((rgb.min(axis=2) < 245).mean())
    coloured = float((np.ptp(rgb, axis=2) > 30).mean())
    return Pixels(width, height, colours, inked, coloured)


def find_chromium() -> str:
    """The Chromium binary to use, or `BrowserMissing` with the install instructions."""
    configured = os.environ.get("KNUMA_CHROMIUM")
    if configured:
        found = shutil.which(configured)
        if found is None:
            raise BrowserMissing(f"KNUMA_CHROMIUM={configured} is not an executable; {INSTALL_HINT}")
        return found
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    raise BrowserMissing(f"no Chromium on PATH (looked for {', '.join(CHROMIUM_NAMES)}); {INSTALL_HINT}")


async def load_page(
    url: str, *, chromium: str | None = None, width: int = 1280, height: int = 1024, timeout: float = 120.0
) -> PageCheck:
    """Open `url` in a fresh headless Chromium, wait until it has loaded (images included), return what it showed."""
    binary = chromium or find_chromium()
    with tempfile.TemporaryDirectory(prefix="knuma-chromium-") as profile:
        async with _chromium(binary, Path(profile), width, height, timeout) as devtools:
            return await asyncio.wait_for(_check(devtools, url), timeout)


@contextlib.asynccontextmanager
async def _chromium(binary: str, profile: Path, width: int, height: int, timeout: float) -> AsyncIterator[_DevTools]:
    log_path = profile.parent / f"{profile.name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the renderer and GPU processes go with it
        )
    try:
        try:
            port = await _devtools_port(process, profile, log_path, timeout)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
                target = await _page_target(session, port, timeout)
                async with session.ws_connect(target, max_msg_size=0) as socket:
                    devtools = _DevTools(socket)
                    reader = asyncio.create_task(devtools.read())
                    try:
                        yield devtools
                    finally:
                        await cancel_and_wait([reader])
        except (TimeoutError, aiohttp.ClientError) as err:
            raise BrowserFailed(f"Chromium did not answer: {err or type(err).__name__}{_tail(log_path)}") from err
    finally:
        stop_group(process, grace=15.0)
        log_path.unlink(missing_ok=True)


async def _devtools_port(process: subprocess.Popen[bytes], profile: Path, log: Path, timeout: float) -> int:
    """The DevTools port Chromium chose, from the first line of `DevToolsActivePort` once it is complete."""
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrowserFailed(f"Chromium exited at start with status {process.returncode}{_tail(log)}")
        with contextlib.suppress(OSError, ValueError):
            lines = marker.read_text().splitlines()
            if len(lines) >= 2:
                return int(lines[0])
        await asyncio.sleep(0.1)
    raise BrowserFailed(f"Chromium wrote no DevToolsActivePort within {timeout:g} s{_tail(log)}")


async def _page_target(session: aiohttp.ClientSession, port: int, timeout: float) -> str:
    """The websocket URL of the first tab (`about:blank`), once Chromium lists it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json(content_type=None)
        for target in targets:
            if target.get("type") == "page" and target.get("webSocketDebuggerUrl"):
                return str(target["webSocketDebuggerUrl"])
        await asyncio.sleep(0.1)
    raise BrowserFailed(f"Chromium listed no page within {timeout:g} s")


class _DevTools:
    """Commands with ids, answers matched by id, events kept in order."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.next_id = 0
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = answer
        await self.socket.send_json({"id": self.next_id, "method": method, "params": params})
        message = await answer
        if "error" in message:
            raise BrowserFailed(f"DevTools {method}: {message['error'].get('message', message['error'])}")
        result: dict[str, Any] = message.get("result", {})
        return result

    async def read(self) -> None:
        async for frame in self.socket:
            if frame.type is not aiohttp.WSMsgType.TEXT:
                break
            message = json.loads(frame.data)
            if "id" in message:
                answer = self.pending.pop(message["id"], None)
                if answer is not None and not answer.done():
                    answer.set_result(message)
                continue
            self.events.append(message)
        for answer in self.pending.values():
            if not answer.done():
                answer.set_exception(BrowserFailed("Chromium closed the DevTools connection"))


_INSPECT = """JSON.stringify({
  title: document.title,
  text: document.body ? document.body.innerText : "",
  images: Array.from(document.images, (i) => ({
    src: i.getAttribute("src") || "", complete: i.complete, width: i.naturalWidth, height: i.naturalHeight,
  })),
})"""


async def _loaded(devtools: _DevTools, url: str) -> None:
    """Wait until the tab shows `url` and its load is complete (images included): polled, so no event can be missed."""
    probe = "JSON.stringify([location.href, document.readyState])"
    while True:
        answer = await devtools.send("Runtime.evaluate", expression=probe, returnByValue=True)
        href, state = json.loads(answer["result"]["value"])
        if href == url and state == "complete":
            return
        await asyncio.sleep(0.1)


async def _check(devtools: _DevTools, url: str) -> PageCheck:
    for domain in ("Page", "Runtime", "Log"):
        await devtools.send(f"{domain}.enable")
    navigation = await devtools.send("Page.navigate", url=url)
    if navigation.get("errorText"):
        raise BrowserFailed(f"Chromium could not load {url}: {navigation['errorText']}")
    await _loaded(devtools, url)
    inspected = await devtools.send("Runtime.evaluate", expression=_INSPECT, returnByValue=True)
    state = json.loads(inspected["result"]["value"])
    layout = await devtools.send("Page.getLayoutMetrics")
    size = layout.get("cssContentSize") or layout["contentSize"]
    shot = await devtools.send(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
    )
    return PageCheck(
        url=url,
        title=state["title"],
        text=state["text"],
        images=[ImageState(i["src"], i["complete"], i["width"], i["height"]) for i in state["images"]],
        console_errors=_errors(devtools.events),
        screenshot=base64.b64decode(shot["data"]),
    )


def _errors(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            errors.append(f"console.{params['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get("text", "")
            errors.append(f"uncaught: {description}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(f"{entry.get('source', 'browser')}: {entry.get('text', '')} {entry.get('url', '')}".strip())
    return errors


def _tail(log: Path, lines: int = 15) -> str:
    with contextlib.suppress(OSError):
        text = log.read_text(errors="replace").strip().splitlines()[-lines:]
        if text:
            return "; Chromium's last log lines:\n" + "\n".join(text)
    return ""
