"""--data-dir: objects and the resourceVersion counter survive a restart and a kill -9."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from knuma.testing.apiserver import apiserver_in_thread, apiserver_process
from tests.local.apiserver.conftest import Http, configmap
from tests.local.apiserver.test_crd import CRDS, widget, widget_crd

CM = "/api/v1/namespaces/default/configmaps"
pytestmark = pytest.mark.slow


def test_restart_keeps_objects_crds_and_counter(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with apiserver_in_thread(tmp_path / "one", data_dir=data) as api:
        http = Http(api)
        http.post(CRDS, widget_crd())
        http.post("/apis/example.knuma.io/v1/namespaces/default/widgets", widget("w", size=3))
        http.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
        http.post("/api/v1/namespaces/team/configmaps", configmap("a", namespace="team", k="v"))
        http.post(CM, configmap("gone"))
        http.delete(f"{CM}/gone")
        last_rv = int(http.get(CM).json["metadata"]["resourceVersion"])
        uid = http.get("/api/v1/namespaces/team/configmaps/a").json["metadata"]["uid"]
    with apiserver_in_thread(tmp_path / "two", data_dir=data) as api:
        http = Http(api)
        restored = http.get("/api/v1/namespaces/team/configmaps/a").json
        assert restored["data"] == {"k": "v"} and restored["metadata"]["uid"] == uid
        assert http.get(f"{CM}/gone").status == 404
        assert http.get("/apis/example.knuma.io/v1/namespaces/default/widgets/w").json["spec"] == {"size": 3}
        assert int(http.get(CM).json["metadata"]["resourceVersion"]) == last_rv
        new = http.post(CM, configmap("after"))
        assert int(new.json["metadata"]["resourceVersion"]) == last_rv + 1
        # A watch from before the restart cannot be resumed: the history is gone, the client must re-list.
        events = http.watch(f"{CM}?watch=true&resourceVersion={last_rv - 3}&timeoutSeconds=1")
        assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with apiserver_process(tmp_path / "one", data_dir=data) as api:
        http = Http(api)
        for n in range(100):
            assert http.post(CM, configmap(f"cm-{n:03}", n=str(n))).status == 201
        http.patch(f"{CM}/cm-000", {"data": {"n": "patched"}}, "application/merge-patch+json")
        rv = http.get(f"{CM}/cm-000").json["metadata"]["resourceVersion"]
        assert api.process is not None
        api.process.send_signal(signal.SIGKILL)
        api.process.wait(5)
        first_kubeconfig = api.kubeconfig.read_text()
    with apiserver_process(tmp_path / "two", data_dir=data) as api:
        # Same token and certificate: kubeconfigs written before the crash keep working.
        assert api.kubeconfig.read_text() == first_kubeconfig.replace(
            first_kubeconfig.split("server: ")[1].split("\n")[0], api.url
        )
        http = Http(api)
        items = http.get(CM).json["items"]
        assert [i["metadata"]["name"] for i in items] == [f"cm-{n:03}" for n in range(100)]
        assert items[0]["data"] == {"n": "patched"}
        assert items[0]["metadata"]["resourceVersion"] == rv


def test_restart_finishes_interrupted_garbage_collection(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with apiserver_in_thread(tmp_path / "one", data_dir=data) as api:
        http = Http(api)
        orphan = configmap("orphan")
        orphan["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "0000-gone", "blockOwnerDeletion": True}
        ]
        http.post(CM, orphan)
        http.post(CM, configmap("keep"))
    with apiserver_in_thread(tmp_path / "two", data_dir=data) as api:
        http = Http(api)
        deadline = time.monotonic() + 5
        while http.get(f"{CM}/orphan").status != 404:
            assert time.monotonic() < deadline, "dependent of a missing owner was not collected"
            time.sleep(0.05)
        assert http.get(f"{CM}/keep").status == 200
