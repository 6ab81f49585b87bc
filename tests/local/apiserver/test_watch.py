"""Watch: replay from a resourceVersion, selectors, bookmarks, timeoutSeconds, 410 Gone, slow watchers."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from knuma.testing.apiserver import apiserver_in_thread
from tests.local.apiserver.conftest import Http, configmap

CM = "/api/v1/namespaces/default/configmaps"
pytestmark = pytest.mark.slow


def test_watch_replays_from_resource_version_and_ends_at_timeout(http_client: Http) -> None:
    rv = http_client.post(CM, configmap("a", x="1")).json["metadata"]["resourceVersion"]
    http_client.patch(f"{CM}/a", {"data": {"x": "2"}}, "application/merge-patch+json")
    http_client.post(CM, configmap("b"))
    http_client.delete(f"{CM}/a")
    started = time.monotonic()
    events = http_client.watch(f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert 0.9 < time.monotonic() - started < 5
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_watch_without_resource_version_starts_with_current_state(http_client: Http) -> None:
    http_client.post(CM, configmap("a"))
    events = http_client.watch(f"{CM}?watch=1&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


def test_boolean_parameters_read_as_kube_apiservers_parameter_codec_reads_them(http_client: Http) -> None:
    """`Convert_Slice_string_To_bool`: only `0` and `false` (any case) are false; `?watch=yes` is a watch, not a
    list, and `?watch=False` a list."""
    http_client.post(CM, configmap("a"))
    for value in ("yes", "TRUE", ""):
        events = http_client.watch(f"{CM}?watch={value}&timeoutSeconds=1")
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")], value
    for value in ("False", "0"):
        assert http_client.get(f"{CM}?watch={value}").json["kind"] == "ConfigMapList", value


def test_watch_label_selector_sends_deleted_when_object_leaves_selection(http_client: Http) -> None:
    rv = http_client.post(CM, configmap("a", labels={"app": "x"})).json["metadata"]["resourceVersion"]
    http_client.patch(f"{CM}/a", {"metadata": {"labels": {"app": "y"}}}, "application/merge-patch+json")
    http_client.post(CM, configmap("b", labels={"app": "y"}))
    events = http_client.watch(f"{CM}?watch=true&labelSelector=app%3Dx&resourceVersion={int(rv) - 1}&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("DELETED", "a")]


def test_bookmarks_carry_the_current_resource_version(http_client: Http) -> None:
    rv = http_client.post(CM, configmap("a")).json["metadata"]["resourceVersion"]
    events = http_client.watch(f"{CM}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds=1")
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2  # periodic (0.3 s in the fixture) plus one at the end
    assert bookmarks[-1]["object"]["kind"] == "ConfigMap"
    assert bookmarks[-1]["object"]["metadata"]["resourceVersion"] == rv
    assert not [e for e in events if e["type"] != "BOOKMARK"]


def test_send_initial_events_ends_with_marked_bookmark(http_client: Http) -> None:
    http_client.post(CM, configmap("a"))
    events = http_client.watch(
        f"{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"
    )
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_too_old_resource_version_is_410_gone(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, watch_window=5) as api:
        client = Http(api)
        first = client.post(CM, configmap("a")).json["metadata"]["resourceVersion"]
        for n in range(10):
            client.post(CM, configmap(f"x{n}"))
        events = client.watch(f"{CM}?watch=true&resourceVersion={first}&timeoutSeconds=1")
        assert len(events) == 1
        assert events[0]["type"] == "ERROR"
        assert events[0]["object"]["code"] == 410
        assert events[0]["object"]["reason"] == "Expired"
        token = client.get(f"{CM}?limit=2").json["metadata"]["continue"]
        for n in range(10):
            client.post(CM, configmap(f"y{n}"))
        expired = client.get(f"{CM}?limit=2&continue={token}")
        assert (expired.status, expired.json["reason"]) == (410, "Expired")
        # Recovery: re-list and watch from the list's resourceVersion.
        rv = client.get(CM).json["metadata"]["resourceVersion"]
        client.post(CM, configmap("after"))
        resumed = client.watch(f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1")
        assert [e["object"]["metadata"]["name"] for e in resumed] == ["after"]


def test_slow_watcher_does_not_block_writes_or_other_watchers(tmp_path: Path) -> None:
    with apiserver_in_thread(tmp_path, watch_queue_size=50, watch_write_timeout=1.0) as api:
        client = Http(api)
        big = "x" * 60000
        # A watcher that never reads: its socket fills, then its queue, then the server drops it.
        # Its stream would last 120 s, so writes that waited for it could not finish within the bound below.
        stalled = client.connection(timeout=120)
        stalled.connect()
        assert stalled.sock is not None
        stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.request("GET", f"{CM}?watch=true&resourceVersion=0&timeoutSeconds=120", headers=api.headers)
        assert stalled.getresponse().status == 200
        received: list[str] = []

        def fast() -> None:
            # A generous server timeout (a loaded CI machine may take a while to write 300 objects); the reader
            # hangs up after the last one.
            conn = client.connection(60)
            try:
                conn.request("GET", f"{CM}?watch=true&resourceVersion=0&timeoutSeconds=60", headers=api.headers)
                resp = conn.getresponse()
                while len(received) < 300 and (line := resp.readline()):
                    if line.strip():
                        received.append(json.loads(line)["object"]["metadata"]["name"])
            finally:
                conn.close()

        reader = threading.Thread(target=fast)
        reader.start()
        time.sleep(0.3)
        started = time.monotonic()
        for n in range(300):
            assert client.post(CM, configmap(f"cm-{n:03}", blob=big)).status == 201
        elapsed = time.monotonic() - started
        reader.join(60)
        assert received == [f"cm-{n:03}" for n in range(300)]
        # Not blocked: writes that waited for the stalled watcher (its 1 s write timeout each, or its 120 s stream)
        # would take 300 s or 120 s; 300 writes of 60 kB take 4-11 s on a loaded 2-core machine.
        assert elapsed < 60
        # The stalled watcher (timeoutSeconds=120) was cut off: its queue overflowed, and as it still read
        # nothing, the server dropped the connection after the 1 s write timeout.
        server = api.server
        assert server is not None

        def watchers() -> int:
            return len(server.store._subscribers.get(("", "configmaps"), set()))

        deadline = time.monotonic() + 10
        while api.call(watchers):
            assert time.monotonic() < deadline, "stalled watcher was never disconnected"
            time.sleep(0.1)
        stalled.close()
