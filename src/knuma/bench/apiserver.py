"""Loopback throughput of `knuma apiserver`: create, update and watch-delivery rates per second.

The server runs in a background thread (as in tests); an aiohttp client drives it over real HTTP with a few
concurrent requests, while `watchers` watch streams count delivered events. Run `python -m knuma.bench.apiserver`.
`make bench` runs it in a process of its own (`run_in_fresh_process`): in the report's process, after the other
sections, the heap they leave made the server's garbage collection slower (in-memory updates 705-1069/s in three
`make bench` runs, against 1822-1944/s in a process of its own on the same code).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import aiohttp

from knuma.api.types import MERGE_PATCH
from knuma.kube.tasks import cancel_and_wait
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

CM = "/api/v1/namespaces/default/configmaps"


@dataclass(frozen=True)
class BenchResult:
    mode: str
    objects: int
    watchers: int
    creates_per_s: float
    updates_per_s: float
    watch_events_per_s: float

    def line(self) -> str:
        return (
            f"{self.mode:>8}: {self.creates_per_s:8.0f} creates/s  {self.updates_per_s:8.0f} updates/s  "
            f"{self.watch_events_per_s:9.0f} watch events/s delivered "
            f"({self.watchers} watchers, {self.objects} objects)"
        )


async def _drive(api: RunningApiServer, objects: int, watchers: int, concurrency: int) -> tuple[float, float, float]:
    ctx: ssl.SSLContext | bool = False
    if api.server is not None and api.server.ca_pem:
        ctx = ssl.create_default_context(cadata=api.server.ca_pem)
    connector = aiohttp.TCPConnector(limit=concurrency + watchers + 2, ssl=ctx)
    async with aiohttp.ClientSession(api.url, headers=api.headers, connector=connector) as session:
        async with session.get(CM) as resp:
            start_rv = (await resp.json())["metadata"]["resourceVersion"]
        expected = 2 * objects
        done = asyncio.Event()
        received = [0] * watchers
        last_event = [0.0]

        async def watch(slot: int) -> None:
            async with session.get(
                CM, params={"watch": "true", "resourceVersion": start_rv, "timeoutSeconds": "600"}
            ) as resp:
                async for _line in resp.content:
                    received[slot] += 1
                    if received[slot] == expected:
                        last_event[0] = max(last_event[0], time.perf_counter())
                        if all(r >= expected for r in received):
                            done.set()
                        return

        tasks = [asyncio.create_task(watch(n)) for n in range(watchers)]
        await asyncio.sleep(0.2)
        queue: asyncio.Queue[int] = asyncio.Queue()

        async def worker(op: str) -> None:
            while True:
                try:
                    n = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if op == "create":
                    body = {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": f"bench-{n}"},
                        "data": {"n": "0"},
                    }
                    async with session.post(
                        CM, data=json.dumps(body), headers={"Content-Type": "application/json"}
                    ) as r:
                        assert r.status == 201, await r.text()
                else:
                    patch = json.dumps({"data": {"n": "1"}})
                    hdrs = {"Content-Type": MERGE_PATCH}
                    async with session.patch(f"{CM}/bench-{n}", data=patch, headers=hdrs) as r:
                        assert r.status == 200, await r.text()

        rates: list[float] = []
        first = time.perf_counter()
        for op in ("create", "update"):
            for n in range(objects):
                queue.put_nowait(n)
            began = time.perf_counter()
            await asyncio.gather(*(worker(op) for _ in range(concurrency)))
            rates.append(objects / (time.perf_counter() - began))
        if watchers:
            await asyncio.wait_for(done.wait(), 120)
            delivered = sum(received) / (last_event[0] - first)
        else:
            delivered = 0.0
        with contextlib.suppress(Exception):
            await cancel_and_wait(tasks)
        return rates[0], rates[1], delivered


def run(
    *, durable: bool = False, objects: int = 2000, watchers: int = 4, concurrency: int = 8, tls: bool = False
) -> BenchResult:
    """Measure one configuration; `durable` stores in sqlite (WAL) in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="knuma-apiserver-bench-") as tmp:
        data_dir = Path(tmp) / "data" if durable else None
        with apiserver_in_thread(Path(tmp) / "api", insecure=not tls, data_dir=data_dir) as api:
            creates, updates, events = asyncio.run(_drive(api, objects, watchers, concurrency))
    mode = ("durable" if durable else "memory") + ("+tls" if tls else "")
    return BenchResult(mode, objects, watchers, creates, updates, events)


def run_in_fresh_process(objects: int = 2000) -> list[BenchResult]:
    """Both modes (memory, then durable) in a new Python process: the server's figures, not the caller's heap's."""
    done = subprocess.run(
        [sys.executable, "-m", "knuma.bench.apiserver", "--objects", str(objects)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return [BenchResult(**json.loads(line)) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--objects", type=int, default=2000)
    args = parser.parse_args()
    for durable in (False, True):
        result = run(durable=durable, objects=args.objects)
        print(result.line())
        print(json.dumps(asdict(result)))


if __name__ == "__main__":
    main()
