"""The deprecated `v1alpha1` version is served (conversion strategy None on `knuma apiserver`): a v1alpha1
NUMAResourcesOperator is read back at v1 and reconciled, its `disablePodsFingerprinting` taken as
`podsFingerprinting: Disabled`, and a v1 object reads back at v1alpha1."""

from __future__ import annotations

from pathlib import Path

from knuma.api.numaresources import PodsFingerprinting, parse_operator_spec
from knuma.deploy.cluster import connect
from knuma.operator.manager import install_crds
from knuma.operator.reconciler import Reconciler, Settings
from knuma.testing.apiserver import apiserver_in_thread

ALPHA = "/apis/nodetopology.openshift.io/v1alpha1/numaresourcesoperators"
V1 = "/apis/nodetopology.openshift.io/v1/numaresourcesoperators"


def test_disable_pods_fingerprinting_is_v1alpha1s_disabled() -> None:
    group = {"machineConfigPoolSelector": {"matchLabels": {"node-role.kubernetes.io/cnf": ""}}}
    spec = parse_operator_spec({"nodeGroups": [{**group, "disablePodsFingerprinting": True}]})
    assert spec.node_groups[0].config.pods_fingerprinting is PodsFingerprinting.DISABLED
    explicit = {**group, "disablePodsFingerprinting": True, "config": {"podsFingerprinting": "Enabled"}}
    assert parse_operator_spec({"nodeGroups": [explicit]}).node_groups[0].config.pods_fingerprinting.value == "Enabled"


def test_a_v1alpha1_resource_is_served_at_both_versions_and_reconciled(tmp_path: Path) -> None:
    nro = {
        "apiVersion": "nodetopology.openshift.io/v1alpha1",
        "kind": "NUMAResourcesOperator",
        "metadata": {"name": "numaresourcesoperator"},
        "spec": {
            "nodeGroups": [
                {
                    "machineConfigPoolSelector": {"matchLabels": {"node-role.kubernetes.io/cnf": ""}},
                    "disablePodsFingerprinting": True,
                }
            ]
        },
    }
    with apiserver_in_thread(tmp_path / "api") as api, connect(str(api.kubeconfig)) as session:
        install_crds(session)
        created = session.http.post(ALPHA, json=nro)
        assert created.status_code == 201, created.text
        as_v1 = session.http.get(f"{V1}/numaresourcesoperator").json()
        assert as_v1["apiVersion"] == "nodetopology.openshift.io/v1"
        assert as_v1["spec"]["nodeGroups"][0]["disablePodsFingerprinting"] is True
        Reconciler(session, Settings("ops")).reconcile_all()
        ds = session.http.get("/apis/apps/v1/namespaces/ops/daemonsets/numaresourcesoperator-cnf").json()
        as_alpha = session.http.get(f"{ALPHA}/numaresourcesoperator").json()
    assert "--no-pods-fingerprint" in ds["spec"]["template"]["spec"]["containers"][0]["args"]
    assert as_alpha["apiVersion"] == "nodetopology.openshift.io/v1alpha1"
    assert {c["type"] for c in as_alpha["status"]["conditions"]} >= {"Available", "Progressing", "Degraded"}
