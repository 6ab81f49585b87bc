"""Issue 18 item 6 (and the bearer scheme of item 11): the watch history is bounded by events and bytes by default,
idle unauthenticated connections cannot exhaust the server, and `bearer` is accepted in any case."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from knuma.local.apiserver.store import DEFAULT_WINDOW_BYTES, DEFAULT_WINDOW_EVENTS, Store
from knuma.testing.apiserver import apiserver_in_thread
from tests.local.apiserver.conftest import Http, configmap

CM = "/api/v1/namespaces/default/configmaps"


def test_the_default_watch_history_is_bounded_by_count() -> None:
    store = Store()
    for n in range(DEFAULT_WINDOW_EVENTS + 500):
        store.put(("", "configmaps"), {"metadata": {"namespace": "d", "name": f"c{n}"}}, created=True)
    assert store.history_len == DEFAULT_WINDOW_EVENTS
    assert store.compacted_rv == 500
    assert store.events_since(("", "configmaps"), 499) is None
    assert len(store.events_since(("", "configmaps"), 500) or []) == DEFAULT_WINDOW_EVENTS


def test_the_default_watch_history_is_bounded_by_bytes() -> None:
    store = Store()
    blob = "x" * 100_000
    for n in range(400):  # 40 MB of objects written, updated in place
        obj = {"metadata": {"namespace": "d", "name": f"c{n % 10}"}, "data": {"blob": blob}}
        store.put(("", "configmaps"), obj, created=n < 10)
    assert store.history_bytes <= DEFAULT_WINDOW_BYTES
    assert store.history_len < 400
    assert store.count(("", "configmaps")) == 10


def test_a_watch_beyond_the_byte_window_is_410_and_a_recent_one_resumes(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, watch_window_bytes=60_000) as api:
        client = Http(api)
        first = client.post(CM, configmap("first")).json["metadata"]["resourceVersion"]
        for n in range(10):
            client.post(CM, configmap(f"big{n}", blob="x" * 10_000))
        assert api.call(lambda: api.server.store.history_bytes if api.server else 0) <= 60_000
        events = client.watch(f"{CM}?watch=true&resourceVersion={first}&timeoutSeconds=1")
        assert [e["object"]["code"] for e in events] == [410]
        recent = client.get(CM).json["metadata"]["resourceVersion"]
        client.post(CM, configmap("after"))
        resumed = client.watch(f"{CM}?watch=true&resourceVersion={recent}&timeoutSeconds=1")
        assert [e["object"]["metadata"]["name"] for e in resumed] == ["after"]


@pytest.mark.parametrize("insecure", [False, True], ids=["https", "http"])
def test_idle_connections_cannot_lock_out_clients(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, insecure: bool
) -> None:
    """Over HTTPS idle sockets never finish the TLS handshake (closed at the handshake deadline); over plain HTTP
    they reach the HTTP layer, where the oldest are evicted beyond the limit and the rest closed at the deadline."""
    caplog.set_level(logging.WARNING, logger="knuma.local.apiserver")
    with apiserver_in_thread(tmp_path, insecure=insecure, max_connections=20, preauth_timeout=1.0) as api:
        client = Http(api)
        parts = urlsplit(api.url)
        idle = [socket.create_connection((parts.hostname, parts.port), timeout=5) for _ in range(200)]
        try:
            started = time.monotonic()
            for _ in range(5):
                assert client.get("/api/v1/namespaces").status == 200
            assert time.monotonic() - started < 5.0
            # An authenticated watch outlives the pre-authentication deadline.
            watch = client.connection(timeout=10)
            watch.request("GET", f"{CM}?watch=true&timeoutSeconds=4", headers=api.headers)
            stream = watch.getresponse()
            assert stream.status == 200
            time.sleep(2.0)
            closed = 0
            for sock in idle:
                try:
                    sock.settimeout(0.2)
                    closed += sock.recv(1) == b""
                except (ConnectionResetError, BrokenPipeError):
                    closed += 1
                except TimeoutError:
                    pass
            assert closed == len(idle)
            client.post(CM, configmap("seen"))
            assert b'"seen"' in stream.readline()
            assert api.call(lambda: api.server.connections.open_connections if api.server else -1) <= 3
        finally:
            for sock in idle:
                sock.close()
    drops = [r for r in caplog.records if "closed" in r.getMessage() and "connection" in r.getMessage()]
    assert len(drops) <= 3
    if insecure:
        assert drops and "connection limit reached" in drops[0].getMessage()


def test_the_bearer_scheme_is_case_insensitive(http_client: Http) -> None:
    token = http_client.api.token
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        reply = http_client.get("/api/v1/namespaces", auth=False, headers={"Authorization": f"{scheme} {token}"})
        assert reply.status == 200, scheme
    for header in (f"Basic {token}", f"Bearer{token}", "Bearer wrong", f"Token {token}"):
        assert http_client.get("/api/v1/namespaces", auth=False, headers={"Authorization": header}).status == 401
