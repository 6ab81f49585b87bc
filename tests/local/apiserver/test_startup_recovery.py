"""Issue 18 item 2: start-up never dies on stored data. Rows an older server (or a hand edit) left behind that this
server cannot serve are reported and set aside in table `set_aside`; everything else is served as before."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from knuma.testing.apiserver import apiserver_in_thread
from tests.local.apiserver.conftest import Http, configmap
from tests.local.apiserver.test_crd import CRDS, widget, widget_crd

pytestmark = pytest.mark.slow

DB = "knuma-apiserver.sqlite3"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }


def _plant(db: Path, group: str, resource: str, namespace: str, name: str, body: str) -> None:
    """Write a row the way an older, less strict server did."""
    with sqlite3.connect(db) as conn:
        rv = conn.execute("SELECT value FROM meta WHERE key = 'rv'").fetchone()[0] + 1
        conn.execute(
            "INSERT OR REPLACE INTO objects (grp, resource, namespace, name, rv, body) VALUES (?, ?, ?, ?, ?, ?)",
            (group, resource, namespace, name, rv, body),
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'rv'", (rv,))


def test_unservable_stored_objects_are_set_aside_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    with apiserver_in_thread(tmp_path / "one", data_dir=data) as api:
        http = Http(api)
        assert http.post(CRDS, widget_crd()).status == 201
        assert http.post("/apis/example.knuma.io/v1/namespaces/default/widgets", widget("w", size=3)).status == 201
        assert http.post(DEPLOYMENTS, _deployment("web")).status == 201
        assert http.post("/api/v1/nodes", {"metadata": {"name": "good"}}).status == 201
        assert http.post("/api/v1/namespaces/default/configmaps", configmap("kept")).status == 201
    db = data / DB
    node5 = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": 5, "uid": "u5", "resourceVersion": "1"}}
    _plant(db, "", "nodes", "", "5", json.dumps(node5))
    nameless = widget_crd()
    nameless["metadata"]["name"] = "gadgets.example.knuma.io"
    nameless["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    nameless["spec"]["versions"].append({"served": True, "storage": False})
    _plant(
        db, "apiextensions.k8s.io", "customresourcedefinitions", "", "gadgets.example.knuma.io", json.dumps(nameless)
    )
    numeric = widget_crd()
    numeric["metadata"]["name"] = "gizmos.example.knuma.io"
    numeric["spec"]["names"] = {"plural": "gizmos", "kind": "Gizmo"}
    numeric["spec"]["versions"][0]["name"] = 1
    _plant(db, "apiextensions.k8s.io", "customresourcedefinitions", "", "gizmos.example.knuma.io", json.dumps(numeric))
    shadow = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "leases.coordination.k8s.io", "annotations": {"api-approved.kubernetes.io": "unapproved"}},
        "spec": {
            "group": "coordination.k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "leases", "kind": "Lease"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    _plant(
        db, "apiextensions.k8s.io", "customresourcedefinitions", "", "leases.coordination.k8s.io", json.dumps(shadow)
    )
    owned = configmap("owned")
    owned["metadata"].update(namespace="default", uid="u-owned", ownerReferences="x")
    _plant(db, "", "configmaps", "default", "owned", json.dumps(owned))
    _plant(db, "", "configmaps", "default", "torn", '{"apiVersion": "v1", "kind": "Conf')

    caplog.set_level(logging.ERROR, logger="knuma.local.apiserver")
    with apiserver_in_thread(tmp_path / "two", data_dir=data) as api:
        http = Http(api)
        nodes = http.get("/api/v1/nodes")
        assert nodes.status == 200 and [n["metadata"]["name"] for n in nodes.json["items"]] == ["good"]
        assert http.get("/apis").status == 200
        crds = {c["metadata"]["name"] for c in http.get(CRDS).json["items"]}
        assert crds == {"widgets.example.knuma.io"}
        assert http.get("/apis/example.knuma.io/v1/namespaces/default/widgets/w").json["spec"] == {"size": 3}
        assert http.get(f"{DEPLOYMENTS}/web").status == 200
        assert http.get("/apis/coordination.k8s.io/v1/namespaces/default/leases").status == 200
        cms = [c["metadata"]["name"] for c in http.get("/api/v1/namespaces/default/configmaps").json["items"]]
        assert cms == ["kept"]
        assert http.post("/api/v1/nodes", {"metadata": {"name": "after"}}).status == 201
    with sqlite3.connect(db) as conn:
        aside = {(r[0], r[1]): r[2] for r in conn.execute("SELECT resource, name, reason FROM set_aside")}
    assert set(aside) == {
        ("nodes", "5"),
        ("customresourcedefinitions", "gadgets.example.knuma.io"),
        ("customresourcedefinitions", "gizmos.example.knuma.io"),
        ("customresourcedefinitions", "leases.coordination.k8s.io"),
        ("configmaps", "owned"),
        ("configmaps", "torn"),
    }
    assert "spec.versions[1].name" in aside[("customresourcedefinitions", "gadgets.example.knuma.io")]
    assert "built-in resource" in aside[("customresourcedefinitions", "leases.coordination.k8s.io")]
    assert "not JSON" in aside[("configmaps", "torn")]
    reported = " ".join(r.getMessage() for r in caplog.records)
    assert "set aside stored object core/nodes" in reported and "set_aside" in reported


GARBAGE = b"\xff\xfe\x00garbage" * 512
KEPT = "knuma does not delete or overwrite"


def _start(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`knuma apiserver --data-dir DATA_DIR` as the user runs it (a start that succeeded would time out)."""
    return subprocess.run(
        [sys.executable, "-m", "knuma", "apiserver", "--port", "0", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_data_dir_that_is_a_file_is_an_error_line(tmp_path: Path) -> None:
    regular = tmp_path / "notes.txt"
    regular.write_text("mine\n")
    done = _start(regular)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {regular} is not a directory: --data-dir needs a directory (it is created when missing); give "
        "another --data-dir\n",
    )
    assert regular.read_text() == "mine\n"
    done = _start(regular / "sub")
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cannot create the data directory {regular / 'sub'}: Not a directory; give --data-dir a directory "
        "you can write\n",
    )


def test_a_database_sqlite_cannot_read_stops_the_start_naming_it_and_is_left_as_it_is(tmp_path: Path) -> None:
    """Start-up sets unservable rows aside (above); a file that is no database at all is refused, never replaced."""
    data = tmp_path / "data"
    data.mkdir()
    db = data / DB
    db.write_bytes(GARBAGE)
    done = _start(data)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {db} cannot be used as the server's database (file is not a database): move it aside, with its "
        f"-wal and -shm files, to start with an empty store ({KEPT} it), or give another --data-dir\n",
    )
    assert db.read_bytes() == GARBAGE
    assert sorted(p.name for p in data.iterdir()) == [DB, "token"]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"token": GARBAGE},
            "{d}/token is not the token knuma keeps there (UTF-16 text (it starts with a UTF-16 byte-order mark), not "
            "UTF-8): move it aside to have a new one generated (kubeconfigs written with the old one then stop "
            f"working; {KEPT} it), or give another --data-dir",
        ),
        (
            {"serving.crt": b"not a certificate\n", "serving.key": b"not a key\n"},
            "cannot serve with the certificate {d}/serving.crt and key {d}/serving.key (OpenSSL cannot load them: "
            "[SSL] PEM lib (_ssl.c:",
        ),
    ],
)
def test_a_token_or_certificate_that_is_not_one_stops_the_start_naming_it(
    tmp_path: Path, files: dict[str, bytes], message: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name, content in files.items():
        (data / name).write_bytes(content)
    done = _start(data)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {message.format(d=data)}") and len(done.stderr.splitlines()) == 1
    assert done.stderr.endswith(f"{KEPT} {'it' if 'token' in files else 'them'}), or give another --data-dir\n")
    assert all((data / name).read_bytes() == content for name, content in files.items())


@pytest.mark.parametrize("counter", ["abc", 1])
def test_a_resource_version_counter_not_a_number_or_behind_its_objects_goes_on_after_them(
    tmp_path: Path, counter: object, caplog: pytest.LogCaptureFixture
) -> None:
    """A hand-edited counter that is not a number stopped the start with a traceback; one behind the stored objects
    would hand their resourceVersions out again. The server goes on after the newest object either way."""
    data = tmp_path / "data"
    with apiserver_in_thread(tmp_path / "one", data_dir=data) as api:
        http = Http(api)
        for name in ("a", "b", "c"):
            assert http.post("/api/v1/namespaces/default/configmaps", configmap(name)).status == 201
        newest = int(http.get("/api/v1/namespaces/default/configmaps/c").json["metadata"]["resourceVersion"])
    with sqlite3.connect(data / DB) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'rv'", (counter,))
    with caplog.at_level(logging.ERROR), apiserver_in_thread(tmp_path / "two", data_dir=data) as api:
        http = Http(api)
        assert http.get("/api/v1/namespaces/default/configmaps/a").status == 200
        made = http.post("/api/v1/namespaces/default/configmaps", configmap("d"))
        assert int(made.json["metadata"]["resourceVersion"]) > newest
    assert ("is not a number" in caplog.text) == (counter == "abc")
