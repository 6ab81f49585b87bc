from __future__ import annotations

import re
from pathlib import Path

import pytest

from knuma.api.nrt import Policy, Scope
from knuma.exporter.tmconfig import (
    ConfigError,
    PodPattern,
    load_config_file,
    load_kubelet_config,
    resolve_topology_manager,
)

KUBELET_YAML = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
reservedSystemCPUs: "0,1,12-13"
topologyManagerPolicy: restricted
topologyManagerScope: pod
topologyManagerPolicyOptions:
  max-allowable-numa-nodes: "16"
  prefer-closest-numa-nodes: "true"
"""

OPERATOR_CONFIGMAP = """\
kubelet:
  topologyManagerPolicy: single-numa-node
podExclude:
- namespacePattern: "openshift-*"
  namePattern: "*"
resourceExclude:
  masternode: [memory, device/exampleA]
  "*": [device/exampleC]
"""


def test_defaults() -> None:
    settings = resolve_topology_manager()
    assert (settings.policy, settings.scope) == (Policy.NONE, Scope.CONTAINER)
    assert settings.attributes() == {"topologyManagerPolicy": "none", "topologyManagerScope": "container"}
    assert settings.sources == {"policy": "default", "scope": "default"}


def test_kubelet_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(KUBELET_YAML)
    kubelet = load_kubelet_config(path)
    assert kubelet.reserved_cpus == frozenset({0, 1, 12, 13})
    assert kubelet.cpu_manager_policy == "static"
    settings = resolve_topology_manager(kubelet_config=kubelet)
    assert (settings.policy, settings.scope) == (Policy.RESTRICTED, Scope.POD)
    assert settings.attributes() == {
        "topologyManagerPolicy": "restricted",
        "topologyManagerScope": "pod",
        "topologyManagerMaxNUMANodes": "16",
        "topologyManagerOptionPreferClosestNumaNodes": "true",
    }
    assert settings.sources == {"policy": str(path), "scope": str(path)}


def test_configz_json_wrapper(tmp_path: Path) -> None:
    path = tmp_path / "configz.json"
    path.write_text('{"kubeletconfig": {"topologyManagerPolicy": "best-effort"}}')
    settings = resolve_topology_manager(kubelet_config=load_kubelet_config(path))
    assert (settings.policy, settings.scope) == (Policy.BEST_EFFORT, Scope.CONTAINER)


def test_operator_configmap_overrides_kubelet_file_field_by_field(tmp_path: Path) -> None:
    kubelet_path = tmp_path / "kubelet.yaml"
    kubelet_path.write_text(KUBELET_YAML)
    cm_path = tmp_path / "config.yaml"
    cm_path.write_text(OPERATOR_CONFIGMAP)
    config = load_config_file(cm_path)
    assert config.pod_exclude == (PodPattern("openshift-*", "*"),)
    assert config.pod_exclude[0].matches("openshift-monitoring", "x")
    assert not config.pod_exclude[0].matches("default", "x")
    assert config.excluded_resources("masternode") == {"memory", "exampleA", "exampleC"}
    assert config.excluded_resources("worker") == {"exampleC"}
    settings = resolve_topology_manager(config_file=config, kubelet_config=load_kubelet_config(kubelet_path))
    assert (settings.policy, settings.scope) == (Policy.SINGLE_NUMA_NODE, Scope.POD)
    assert settings.sources == {"policy": str(cm_path), "scope": str(kubelet_path)}


def test_flags_beat_env_beat_files(tmp_path: Path) -> None:
    cm_path = tmp_path / "config.yaml"
    cm_path.write_text(OPERATOR_CONFIGMAP)
    env = {"TOPOLOGY_MANAGER_POLICY": "best-effort", "TOPOLOGY_MANAGER_SCOPE": "pod"}
    settings = resolve_topology_manager(policy_flag="restricted", env=env, config_file=load_config_file(cm_path))
    assert (settings.policy, settings.scope) == (Policy.RESTRICTED, Scope.POD)
    assert settings.sources == {"policy": "flag", "scope": "env"}


def test_errors_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "kubelet.yaml"
    path.write_text("topologyManagerPolicy: strict\n")
    with pytest.raises(ConfigError, match=f"{path}: topologyManagerPolicy: unknown Topology Manager policy 'strict'"):
        load_kubelet_config(path)
    path.write_text("kind: Pod\n")
    with pytest.raises(ConfigError, match="expected KubeletConfiguration"):
        load_kubelet_config(path)
    path.write_text("reservedSystemCPUs: 'a-b'\n")
    with pytest.raises(ConfigError, match="reservedSystemCPUs"):
        load_kubelet_config(path)
    path.write_text("topologyManagerPolicyOptions: {max-allowable-numa-nodes: many}\n")
    with pytest.raises(ConfigError, match="max-allowable-numa-nodes must be a positive integer"):
        load_kubelet_config(path)
    path.write_text("kubelet: {topologyManagerScope: node}\n")
    with pytest.raises(ConfigError, match=f"{path}: kubelet.topologyManagerScope: unknown Topology Manager scope"):
        load_config_file(path)
    path.write_text("kubelet: [\n")
    with pytest.raises(ConfigError, match="malformed YAML at line"):
        load_config_file(path)
    with pytest.raises(ConfigError, match="no such file"):
        load_config_file(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="--topology-manager-scope"):
        resolve_topology_manager(scope_flag="node")


def test_cpu_manager_policy_options_are_read_from_the_kubelet_configuration(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        KUBELET_YAML + 'cpuManagerPolicyOptions:\n  full-pcpus-only: "true"\n  distribute-cpus-across-numa: "false"\n'
    )
    options = load_kubelet_config(path).cpu_manager_options
    assert options is not None
    assert (options.full_pcpus_only, options.distribute_cpus_across_numa) == (True, False)
    assert load_kubelet_config(tmp_path / "config.yaml").cpu_manager_options == options
    plain = tmp_path / "plain.yaml"
    plain.write_text(KUBELET_YAML)
    assert load_kubelet_config(plain).cpu_manager_options is not None  # static, no options


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('cpuManagerPolicyOptions:\n  full-cores: "true"\n', "unknown CPU Manager Policy option 'full-cores'"),
        ('cpuManagerPolicyOptions:\n  full-pcpus-only: "maybe"\n', "full-pcpus-only: bad value 'maybe'"),
        ("cpuManagerPolicyOptions: [full-pcpus-only]\n", "cpuManagerPolicyOptions must be a mapping"),
    ],
)
def test_bad_cpu_manager_policy_options_name_the_file_and_option(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(KUBELET_YAML + extra)
    with pytest.raises(ConfigError, match=message) as caught:
        load_kubelet_config(path)
    assert str(path) in str(caught.value)


def test_cpu_manager_policy_options_need_the_static_policy(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text('cpuManagerPolicy: none\ncpuManagerPolicyOptions:\n  full-pcpus-only: "true"\n')
    with pytest.raises(ConfigError, match="need cpuManagerPolicy: static"):
        load_kubelet_config(path)
    path.write_text("cpuManagerPolicy: none\n")
    assert load_kubelet_config(path).cpu_manager_options is None


def test_max_allowable_numa_nodes_below_eight_is_refused_as_the_kubelet_does(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text('topologyManagerPolicyOptions: {max-allowable-numa-nodes: "4"}\n')
    with pytest.raises(ConfigError, match='the minimum value of "max-allowable-numa-nodes" should not be less than 8'):
        load_kubelet_config(path)
    path.write_text('topologyManagerPolicyOptions: {max-allowable-numa-nodes: "8"}\n')
    assert load_kubelet_config(path).max_numa_nodes == 8


def test_align_by_socket_with_single_numa_node_is_refused_as_the_kubelet_does(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        'cpuManagerPolicy: static\ncpuManagerPolicyOptions: {align-by-socket: "true"}\n'
        "topologyManagerPolicy: single-numa-node\n"
    )
    with pytest.raises(
        ConfigError, match="align-by-socket is incompatible with topologyManagerPolicy single-numa-node"
    ):
        load_kubelet_config(path)
    path.write_text(
        'cpuManagerPolicy: static\ncpuManagerPolicyOptions: {align-by-socket: "true"}\n'
        "topologyManagerPolicy: restricted\n"
    )
    options = load_kubelet_config(path).cpu_manager_options
    assert options is not None and options.align_by_socket


def test_misspelt_keys_of_the_extra_config_are_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """RTE ignores unknown keys silently, so `topologyManagerPolcy: single-numa-node` leaves the node on another
    policy without a word; knuma still ignores such keys but says which, and the exporter logs it."""
    import logging

    from knuma.exporter.settings import ExporterSettings, build_options

    path = tmp_path / "config.yaml"
    path.write_text(OPERATOR_CONFIGMAP)
    assert load_config_file(path).warnings == ()  # what the operator renders is all known
    path.write_text("kubelet: {topologyManagerPolcy: single-numa-node}\npodExclud: []\n")
    config = load_config_file(path)
    assert config.policy is None
    assert config.warnings == (
        f"{path}: podExclud: unknown key, ignored (known: kubelet, podExclude, resourceExclude)",
        f"{path}: kubelet.topologyManagerPolcy: unknown key, ignored (known: topologyManagerPolicy, "
        "topologyManagerScope, cpuManagerPolicy, cpuManagerPolicyOptions, memoryManagerPolicy, reservedSystemCPUs, "
        "topologyManagerPolicyOptions)",
    )
    with caplog.at_level(logging.WARNING, logger="knuma.exporter.config"):
        build_options(ExporterSettings(node_name="n", config_file=str(path)), env={})
    assert [r.getMessage() for r in caplog.records if r.name == "knuma.exporter.config"] == list(config.warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "reservedSystemCPUs: 0\n",
            "reservedSystemCPUs: expected a string, got 0; quote it (the kubelet refuses to start: json: cannot "
            "unmarshal number into Go struct field KubeletConfiguration.reservedSystemCPUs of type string)",
        ),
        (
            KUBELET_YAML + "cpuManagerPolicyOptions:\n  full-pcpus-only: true\n",
            "cpuManagerPolicyOptions.full-pcpus-only: expected a string, got True; quote it (the kubelet refuses to "
            "start: json: cannot unmarshal bool into Go struct field KubeletConfiguration.cpuManagerPolicyOptions of "
            "type string)",
        ),
        (
            "topologyManagerPolicyOptions:\n  max-allowable-numa-nodes: 16\n",
            "topologyManagerPolicyOptions.max-allowable-numa-nodes: expected a string, got 16",
        ),
        ("topologyManagerPolicy: [restricted]\n", "cannot unmarshal array into Go struct field"),
        ("memoryManagerPolicy: {static: 1}\n", "cannot unmarshal object into Go struct field"),
    ],
    ids=["reserved-number", "option-bool", "numa-nodes-number", "policy-list", "memory-policy-map"],
)
def test_a_value_the_kubelets_decoder_refuses_is_an_error_not_a_different_value(
    tmp_path: Path, text: str, message: str
) -> None:
    """Go decodes a KubeletConfiguration into typed fields: a number or a bool where a string belongs stops the
    kubelet. `reservedSystemCPUs: 0` was read as no reserved CPU at all; it is an error naming the field."""
    path = tmp_path / "kubelet.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_kubelet_config(path)
    path.write_text(text.replace(": 0\n", ': "0"\n').replace(": true\n", ': "true"\n').replace(": 16\n", ': "16"\n'))
    if "[" not in text and "{" not in text:
        load_kubelet_config(path)  # quoted, the same values are fine
    config = tmp_path / "config.yaml"  # the exporter config's kubelet section: the same check, no kubelet wording
    config.write_text("kubelet:\n" + "".join(f"  {line}\n" for line in text.splitlines()))
    with pytest.raises(ConfigError, match=r"kubelet\..*expected a string") as caught:
        load_config_file(config)
    assert "kubelet refuses" not in str(caught.value)
