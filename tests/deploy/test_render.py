"""`knuma render`: golden files per platform and variant, strict schema validation for every supported Kubernetes
version, and the properties the issue asks for (security, least privilege, real exporter flags, upstream flags)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer
import yaml

from knuma.cli import exporter as exporter_cli
from knuma.deploy.options import (
    Component,
    DeployOptions,
    OptionsError,
    Platform,
    PlatformSpec,
    SchedulerVariant,
    UpdaterType,
    format_duration,
    parse_component,
    parse_duration,
    parse_platform,
)
from knuma.deploy.render import render, to_json, to_yaml
from knuma.deploy.scheduler import CONFIG_KEY

from .schemas import validate_strict

GOLDEN = Path(__file__).parent / "golden"
#: Kubernetes versions the manifests are validated against (the schemas kubernetes-validate ships from 1.25 on).
KUBERNETES_VERSIONS = [f"1.{minor}.0" for minor in range(25, 38)]
OPENSHIFT_KINDS = {"SecurityContextConstraints"}

VARIANTS: dict[str, DeployOptions] = {
    "kubernetes": DeployOptions(),
    "kubernetes-ha-notify-config": DeployOptions(
        replicas=3, updater_notifications=True, updater_config="podExclude:\n- namespacePattern: kube-*\n"
    ),
    "kubernetes-upstream-rte": DeployOptions(scheduler=SchedulerVariant.UPSTREAM, updater=UpdaterType.RTE),
    "kubernetes-upstream-nfd": DeployOptions(scheduler=SchedulerVariant.UPSTREAM, updater=UpdaterType.NFD),
    "openshift": DeployOptions(platform=PlatformSpec(Platform.OPENSHIFT, "4.16")),
    "openshift-upstream-rte": DeployOptions(
        platform=PlatformSpec(Platform.OPENSHIFT, "4.16"), scheduler=SchedulerVariant.UPSTREAM, updater=UpdaterType.RTE
    ),
}


def all_objects(options: DeployOptions) -> list[dict[str, Any]]:
    return render(list(Component), options)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_golden(name: str) -> None:
    """The rendered YAML is reviewed text; `KNUMA_UPDATE_GOLDEN=1 pytest tests/deploy` rewrites the files."""
    text = to_yaml(all_objects(VARIANTS[name]))
    path = GOLDEN / f"{name}.yaml"
    if os.environ.get("KNUMA_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing: run KNUMA_UPDATE_GOLDEN=1 pytest tests/deploy"
    assert text == path.read_text(), f"{name} differs from {path}; if intended, regenerate with KNUMA_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_strict_schema_validation_on_every_supported_version(name: str) -> None:
    objects = [o for o in all_objects(VARIANTS[name]) if o["kind"] not in OPENSHIFT_KINDS]
    for version in KUBERNETES_VERSIONS:
        for obj in objects:
            validate_strict(obj, version)


def test_strict_validation_catches_a_typo() -> None:
    """The check above can fail, and agrees with kubernetes-validate's own entry point."""
    deployment = next(o for o in all_objects(DeployOptions()) if o["kind"] == "Deployment")
    kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError, match="imagePullPolicyy"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)
    with pytest.raises(kubernetes_validate.ValidationError, match="imagePullPolicyy"):
        validate_strict(deployment, KUBERNETES_VERSIONS[-1])


def test_yaml_stream_and_json_list_hold_the_same_objects() -> None:
    objects = all_objects(DeployOptions())
    text = to_yaml(objects)
    assert text.startswith("---\n") and text.count("\n---\n") == len(objects) - 1
    assert list(yaml.safe_load_all(text)) == objects
    assert yaml.safe_load(to_json(objects)) == {"apiVersion": "v1", "kind": "List", "items": objects}
    assert "&id" not in text and "*id" not in text


def test_order_is_crd_then_updater_then_scheduler_namespace_first_workload_last() -> None:
    objects = all_objects(DeployOptions())
    kinds = [o["kind"] for o in objects]
    assert kinds[0] == "CustomResourceDefinition"
    updater = [o for o in objects if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "updater"]
    scheduler = [o for o in objects if o["metadata"]["labels"]["app.kubernetes.io/component"] == "scheduler"]
    assert objects.index(updater[-1]) < objects.index(scheduler[0])
    for part, workload in ((updater, "DaemonSet"), (scheduler, "Deployment")):
        assert part[0]["kind"] == "Namespace" and part[-1]["kind"] == workload
    assert render([Component.SCHEDULER, Component.API], DeployOptions())[0]["kind"] == "CustomResourceDefinition"


def containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_security_by_default(name: str) -> None:
    for obj in all_objects(VARIANTS[name]):
        if obj["kind"] not in ("Deployment", "DaemonSet"):
            continue
        assert obj["spec"]["template"]["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in containers(obj):
            security = container["securityContext"]
            where = f"{obj['kind']} {obj['metadata']['name']}/{container['name']}"
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            assert set(container["resources"]) == {"requests", "limits"}, where
            assert set(container["resources"]["limits"]) == {"cpu", "memory"}, where
            if obj["kind"] == "Deployment":  # the scheduler needs no host access: non-root, restricted namespace
                assert security["runAsNonRoot"] is True and security["runAsUser"] != 0, where


def _rules(objects: list[dict[str, Any]], kind: str, name: str) -> set[tuple[str, str, str, str]]:
    role = next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)
    return {
        (group, resource, verb, ",".join(rule.get("resourceNames", [])))
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_knuma_scheduler_rbac_is_exactly_what_it_uses() -> None:
    objects = render([Component.SCHEDULER], DeployOptions())
    read = {"get", "list", "watch"}
    expected = {("", r, v, "") for r in ("pods", "nodes") for v in read}
    expected |= {("", "namespaces", v, "") for v in read}  # namespaceSelector of pod affinity terms
    expected |= {("", "pods", "patch", "")}
    expected |= {("", "pods", "delete", ""), ("", "pods/status", "patch", "")}  # preemption
    expected |= {("policy", "poddisruptionbudgets", v, "") for v in ("list", "watch")}
    expected |= {("topology.node.k8s.io", "noderesourcetopologies", v, "") for v in read}
    expected |= {
        ("resource.k8s.io", r, v, "")
        for r in ("resourceclaims", "resourceslices", "deviceclasses", "devicetaintrules")
        for v in read
    }
    expected |= {
        ("resource.k8s.io", r, v, "") for r in ("resourceclaims", "resourceclaims/status") for v in ("update", "patch")
    }
    expected |= {("resource.k8s.io", "resourceclaims", v, "") for v in ("create", "delete")}  # extended resources
    expected |= {("", "pods/binding", "create", "")}
    expected |= {(g, "events", v, "") for g in ("", "events.k8s.io") for v in ("create", "patch")}
    # the secure port's delegated authentication and authorization
    expected |= {("authentication.k8s.io", "tokenreviews", "create", "")}
    expected |= {("authorization.k8s.io", "subjectaccessreviews", "create", "")}
    assert _rules(objects, "ClusterRole", "topology-aware-scheduler") == expected
    leases = _rules(objects, "Role", "topology-aware-scheduler-leader-elect")
    assert leases == {
        ("coordination.k8s.io", "leases", "create", ""),
        ("coordination.k8s.io", "leases", "get", "nrtmatch-scheduler"),
        ("coordination.k8s.io", "leases", "update", "nrtmatch-scheduler"),
    }
    role = next(o for o in objects if o["kind"] == "Role")
    assert role["metadata"]["namespace"] == "tas-scheduler"


def test_knuma_exporter_rbac_is_exactly_what_it_uses() -> None:
    objects = render([Component.UPDATER], DeployOptions())
    assert _rules(objects, "ClusterRole", "knuma-exporter") == {
        ("topology.node.k8s.io", "noderesourcetopologies", "create", ""),
        ("topology.node.k8s.io", "noderesourcetopologies", "get", ""),
        ("topology.node.k8s.io", "noderesourcetopologies", "patch", ""),
        # list and watch: a deleted object, or a re-created CRD, is republished at once (knuma.exporter.objectwatch)
        ("topology.node.k8s.io", "noderesourcetopologies", "list", ""),
        ("topology.node.k8s.io", "noderesourcetopologies", "watch", ""),
        ("", "nodes", "get", ""),
    }


def test_knuma_exporter_with_dra_devices_may_list_and_watch_slices_and_claims_and_nothing_more() -> None:
    """`--dra-devices` runs two informers (knuma.exporter.drawatch): this node's ResourceSlices and every
    ResourceClaim (their allocations say which devices are taken); without the rule it would log 403s forever."""
    plain = _rules(render([Component.UPDATER], DeployOptions()), "ClusterRole", "knuma-exporter")
    with_dra = _rules(
        render([Component.UPDATER], DeployOptions(updater_dra_devices=True)), "ClusterRole", "knuma-exporter"
    )
    assert with_dra - plain == {
        ("resource.k8s.io", resource, verb, "")
        for resource in ("resourceslices", "resourceclaims")
        for verb in ("list", "watch")
    }
    assert "--dra-devices" in _exporter(DeployOptions(updater_dra_devices=True))["args"]
    assert "--dra-devices" not in _exporter(DeployOptions())["args"]


def _exporter(options: DeployOptions) -> dict[str, Any]:
    ds = next(o for o in render([Component.UPDATER], options) if o["kind"] == "DaemonSet")
    container: dict[str, Any] = ds["spec"]["template"]["spec"]["containers"][0]
    return container


@pytest.mark.parametrize(
    "options",
    [
        DeployOptions(),
        DeployOptions(updater_notifications=True, updater_config="x: 1\n", updater_pfp=False),
        DeployOptions(updater_dra_devices=True),
    ],
    ids=["default", "notify-config-nopfp", "dra-devices"],
)
def test_exporter_args_are_real_knuma_exporter_flags(options: DeployOptions) -> None:
    """The DaemonSet's command line parses with `knuma exporter`'s own parser (an unknown flag would crash-loop)."""
    container = _exporter(options)
    assert container["command"] == ["python", "-m", "knuma.cli.exporter"]
    app = typer.Typer()
    exporter_cli.register(app)
    command = typer.main.get_command(app)
    ctx = command.make_context("knuma-exporter", list(container["args"]))
    params = ctx.params
    assert params["sysfs_root"] == "/host-sys"
    assert params["podresources_socket"] == "unix:///host-var/lib/kubelet/pod-resources/kubelet.sock"
    assert params["kubelet_config_file"] == "/host-var/lib/kubelet/config.yaml"
    assert params["kubelet_state_dir"] == "/host-var/lib/kubelet"
    assert params["sleep_interval"] == "10s"
    assert params["pods_fingerprint"] is options.updater_pfp
    assert (params["notify_file"] is not None) is options.updater_notifications
    assert params["dra_devices"] is options.updater_dra_devices
    assert (params["config"] == "/etc/knuma-exporter/config.yaml") is (options.updater_config is not None)
    assert container["env"][0]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    with pytest.raises(Exception, match="No such option: --no-such-flag"):
        command.make_context("knuma-exporter", ["--no-such-flag"])


def test_exporter_host_mounts_are_read_only_except_the_notify_directory() -> None:
    container = _exporter(DeployOptions(updater_notifications=True))
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in container["volumeMounts"]}
    assert mounts["/host-sys"] is True and mounts["/host-var/lib/kubelet"] is True
    assert mounts["/host-run/knuma"] is False  # the exporter creates the notify file, a hook touches it


def _scheduler_config(options: DeployOptions) -> dict[str, Any]:
    cm = next(o for o in render([Component.SCHEDULER], options) if o["kind"] == "ConfigMap")
    config: dict[str, Any] = yaml.safe_load(cm["data"][CONFIG_KEY])
    return config


def test_scheduler_config_follows_the_flags() -> None:
    config = _scheduler_config(DeployOptions(profile_name="numa", resync_period=7))
    assert config["kind"] == "KubeSchedulerConfiguration"
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == "numa"
    assert {p: profile["plugins"][p]["enabled"] for p in ("filter", "reserve", "score")} == {
        p: [{"name": "NodeResourceTopologyMatch"}] for p in ("filter", "reserve", "score")
    }
    args = profile["pluginConfig"][0]["args"]
    assert args["cacheResyncPeriodSeconds"] == 7
    assert config["leaderElection"] == {"leaderElect": False}
    assert (
        "cacheResyncPeriodSeconds"
        not in _scheduler_config(DeployOptions(resync_period=0))["profiles"][0]["pluginConfig"][0]["args"]
    )


def test_leader_election_and_spreading_when_replicas_above_one() -> None:
    options = DeployOptions(replicas=3, leader_elect_resource="kube-system/numa-leader")
    assert _scheduler_config(options)["leaderElection"] == {
        "leaderElect": True,
        "resourceName": "numa-leader",
        "resourceNamespace": "kube-system",
    }
    objects = render([Component.SCHEDULER], options)
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert "podAntiAffinity" in deployment["spec"]["template"]["spec"]["affinity"]
    role = next(o for o in objects if o["kind"] == "Role")
    assert role["metadata"]["namespace"] == "kube-system"


def test_config_change_rolls_the_scheduler() -> None:
    def annotations(options: DeployOptions) -> dict[str, str]:
        deployment = next(o for o in render([Component.SCHEDULER], options) if o["kind"] == "Deployment")
        found: dict[str, str] = deployment["spec"]["template"]["metadata"]["annotations"]
        return found

    assert annotations(DeployOptions()) == annotations(DeployOptions())
    assert annotations(DeployOptions()) != annotations(DeployOptions(resync_period=9))


def test_control_plane_placement_is_preferred_not_required() -> None:
    spec = next(o for o in render([Component.SCHEDULER], DeployOptions()) if o["kind"] == "Deployment")["spec"]
    pod = spec["template"]["spec"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in pod["affinity"]["nodeAffinity"]
    assert {t["key"] for t in pod["tolerations"]} == {
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
    }
    bare = next(
        o for o in render([Component.SCHEDULER], DeployOptions(ctrlplane_affinity=False)) if o["kind"] == "Deployment"
    )
    assert "tolerations" not in bare["spec"]["template"]["spec"]


def test_upstream_variants_keep_upstream_names_and_flags() -> None:
    options = DeployOptions(scheduler=SchedulerVariant.UPSTREAM, updater=UpdaterType.RTE, updater_sync_period=0)
    objects = all_objects(options)
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("DaemonSet", "resource-topology-exporter") in names and ("Deployment", "topology-aware-scheduler") in names
    rte = next(o for o in objects if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    assert rte["args"] == [
        "--sysfs=/host-sys",
        "--podresources-socket=unix:///host-podresources/kubelet.sock",
        "-v=1",
        "--pods-fingerprint=true",
        "--kubelet-config-file=/host-var-lib-kubelet/config.yaml",
    ]
    auth = next(o for o in objects if o["metadata"]["name"] == "topology-aware-scheduler-as-kube-scheduler")
    assert auth["metadata"]["namespace"] == "kube-system"
    sched = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert sched["command"] == ["/bin/kube-scheduler"]
    assert sched["args"] == ["--config=/etc/kubernetes/scheduler-config.yaml", "-v=4"]
    config = yaml.safe_load(next(o for o in objects if o["kind"] == "ConfigMap")["data"][CONFIG_KEY])
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1beta3"


def test_openshift_renders_sccs_and_selinux_type() -> None:
    objects = all_objects(VARIANTS["openshift-upstream-rte"])
    sccs = [o for o in objects if o["kind"] == "SecurityContextConstraints"]
    assert [s["metadata"]["name"] for s in sccs] == ["resource-topology-exporter", "resource-topology-exporter-v2"]
    assert all(s["users"] == ["system:serviceaccount:tas-topology-updater:rte"] for s in sccs)
    ds = next(o for o in objects if o["kind"] == "DaemonSet")
    template = ds["spec"]["template"]
    assert template["metadata"]["annotations"] == {"openshift.io/required-scc": "resource-topology-exporter"}
    assert template["spec"]["containers"][0]["securityContext"]["seLinuxOptions"] == {
        "type": "container_device_plugin_t",
        "level": "s0",
    }
    namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    assert namespaces == {"openshift-topology-aware-scheduler", "tas-topology-updater"}
    ours = all_objects(VARIANTS["openshift"])
    (scc,) = [o for o in ours if o["kind"] == "SecurityContextConstraints"]
    assert scc["metadata"]["name"] == "knuma-exporter-v2"
    assert not [o for o in all_objects(DeployOptions()) if o["kind"] == "SecurityContextConstraints"]


def test_image_overrides_and_pull_policy() -> None:
    from knuma.deploy.images import Images, resolve_images

    images = resolve_images({"knuma": "example.org/knuma:dev"}, env={"TAS_RESOURCE_EXPORTER_IMAGE": "mirror/rte:1"})
    assert images.knuma == "example.org/knuma:dev" and images.resource_topology_exporter == "mirror/rte:1"
    flag_wins = resolve_images({"knuma": "flag:1"}, env={"KNUMA_IMAGE": "env:1"})
    assert flag_wins.knuma == "flag:1"
    assert resolve_images({}, env={"KNUMA_IMAGE": "env:1"}).knuma == "env:1"
    with pytest.raises(ValueError, match="KNUMA_IMAGE"):
        resolve_images({}, env={"KNUMA_IMAGE": "bad image"})
    container = _exporter(DeployOptions(images=Images(knuma="example.org/knuma:dev"), pull_if_not_present=True))
    assert (container["image"], container["imagePullPolicy"]) == ("example.org/knuma:dev", "IfNotPresent")


def test_option_parsing_errors_say_what_is_accepted() -> None:
    assert parse_platform("OpenShift:4.14") == PlatformSpec(Platform.OPENSHIFT, "4.14")
    assert parse_platform("kubernetes") == PlatformSpec(Platform.KUBERNETES, "")
    assert str(parse_platform("kubernetes:v1.29")) == "Kubernetes:v1.29"
    with pytest.raises(OptionsError, match="expected kubernetes, openshift or hypershift"):
        parse_platform("nomad")
    with pytest.raises(OptionsError, match=r"expected e\.g\. v1\.29"):
        parse_platform("kubernetes:latest")
    assert parse_component("scheduler-plugin") == [Component.SCHEDULER]
    assert parse_component(None) == [Component.API, Component.UPDATER, Component.SCHEDULER]
    with pytest.raises(OptionsError, match="expected api, updater or scheduler"):
        parse_component("controller")
    assert parse_duration("1m30s", "--x") == 90 and parse_duration("0", "--x") == 0
    with pytest.raises(OptionsError, match="--updater-sync-period"):
        parse_duration("soon", "--updater-sync-period")
    assert [format_duration(s) for s in (0, 0.5, 10, 90, 3600)] == ["0s", "500ms", "10s", "1m30s", "1h0m0s"]
    with pytest.raises(OptionsError, match="--replicas"):
        DeployOptions(replicas=0)
    with pytest.raises(OptionsError, match="DNS label"):
        DeployOptions(profile_name="Topology Aware")
    with pytest.raises(OptionsError, match="malformed leader election resource"):
        DeployOptions(leader_elect_resource="a/b/c")


@pytest.mark.parametrize("replicas", [1, 2])
def test_scheduler_command_line_and_config_pass_knuma_scheduler_check_config(replicas: int, tmp_path: Path) -> None:
    """The Deployment's command line parses with `knuma scheduler`'s own parser, `--check-config` accepts the
    ConfigMap's file, and the Lease it elects with is the one its Role allows."""
    from typer.testing import CliRunner

    from knuma.cli.main import app as knuma_app
    from knuma.scheduler.config.load import parse_config

    options = DeployOptions(replicas=replicas)
    objects = render([Component.SCHEDULER], options)
    container = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    command, *args = container["args"]
    assert command == "scheduler"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")["mountPath"]
    cm = next(o for o in objects if o["kind"] == "ConfigMap")
    (tmp_path / CONFIG_KEY).write_text(cm["data"][CONFIG_KEY])
    local_args = [a.replace(mount, str(tmp_path)) for a in args]
    result = CliRunner().invoke(knuma_app, ["scheduler", *local_args, "--check-config"])
    assert result.exit_code == 0, result.output
    assert "topology-aware-scheduler" in result.output
    election = parse_config(yaml.safe_load(cm["data"][CONFIG_KEY])).leader_election
    assert election.leader_elect is (replicas > 1)
    secure_port = next(int(a.split("=")[1]) for a in args if a.startswith("--secure-port="))
    assert secure_port == container["ports"][0]["containerPort"] == 10259
    assert "--metrics-port=0" in args  # the deprecated insecure port is off in a pod
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
        assert container[probe]["httpGet"]["port"] == container["ports"][0]["name"]
    rules = next(o for o in objects if o["kind"] == "ClusterRole")["rules"]
    assert {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]} in rules
    assert {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]} in rules
    if replicas > 1:
        role = next(o for o in objects if o["kind"] == "Role")
        assert role["metadata"]["namespace"] == election.resource_namespace == "tas-scheduler"
        assert role["rules"][1]["resourceNames"] == [election.resource_name]


@pytest.mark.parametrize("variant", list(SchedulerVariant))
def test_scheduler_config_loads_in_knuma_scheduler(variant: SchedulerVariant) -> None:
    """Both variants' configurations (v1 for knuma, v1beta3 for scheduler-plugins) are read by knuma's strict
    configuration reader, with the profile, resync period and Lease the flags asked for."""
    from knuma.scheduler.config.load import parse_config

    options = DeployOptions(scheduler=variant, replicas=2, profile_name="numa-aware", resync_period=3)
    config = parse_config(_scheduler_config(options), source="rendered ConfigMap")
    assert [p.scheduler_name for p in config.profiles] == ["numa-aware"]
    assert config.profiles[0].numa is not None and config.profiles[0].numa.cache_resync_period_seconds == 3
    election = config.leader_election
    assert (election.leader_elect, election.resource_namespace, election.resource_name) == (
        True,
        "tas-scheduler",
        "nrtmatch-scheduler",
    )
    assert not config.warnings


@pytest.mark.parametrize(("variant", "rendered", "mode"), [("knuma", None, "knuma"), ("upstream", 5, "overreserve")])
def test_default_resync_period_selects_each_schedulers_own_cache(variant: str, rendered: int | None, mode: str) -> None:
    """Without --sched-resync-period, knuma's scheduler gets no cacheResyncPeriodSeconds (which selects knuma's own NRT
    cache) and the upstream scheduler gets the upstream deployer's 5 s (its overreserve cache)."""
    from knuma.scheduler.config.load import parse_config

    options = DeployOptions(scheduler=SchedulerVariant(variant))
    config = _scheduler_config(options)
    assert config["profiles"][0]["pluginConfig"][0]["args"].get("cacheResyncPeriodSeconds") == rendered
    assert parse_config(config, source="rendered ConfigMap").profiles[0].numa.cache_mode == mode
