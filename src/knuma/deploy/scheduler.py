"""The `scheduler` component, knuma variant: `knuma scheduler` as a secondary scheduler with a
NodeResourceTopologyMatch profile, with only the permissions it uses.

The configuration is a `KubeSchedulerConfiguration` in upstream's shape (profile `topology-aware-scheduler`,
`cacheResyncPeriodSeconds`, `cache`). Without `--sched-scoring-strat-config-file` it is knuma's own profile, the one
the simulator and the benchmarks measure (`knuma.scheduler.config.own_profile`): `scoringStrategy`
KnumaBinPacking and NodeResourcesBalancedAllocation disabled at `score`. With a strategy file, or for the `upstream`
variant (scheduler-plugins' image, which knows neither), the profile is upstream's.
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from knuma.deploy.objects import (
    Manifest,
    cluster_role,
    cluster_role_binding,
    config_map,
    metadata,
    namespace,
    network_policies,
    role,
    role_binding,
    rule,
    security_context,
    service_account,
)
from knuma.deploy.options import DeployOptions, SchedulerVariant
from knuma.scheduler.cache.resyncdebug import DUMP_ENV as RESYNC_DUMP_ENV
from knuma.scheduler.config.own_profile import knuma_profile

__all__ = [
    "CONFIG_KEY",
    "GUARANTEED_RESOURCES",
    "NAME",
    "config_hash",
    "leader_election_lease",
    "render_knuma_scheduler",
    "scheduler_args",
    "scheduler_config",
    "scheduler_namespace",
]

NAME = "topology-aware-scheduler"
COMPONENT = "scheduler"
CONFIG_MAP = "scheduler-config"
CONFIG_KEY = "scheduler-config.yaml"
CONFIG_DIR = "/etc/knuma"
SECURE_PORT = 10259
"""`knuma scheduler`'s `--secure-port` (/metrics, /healthz, /readyz, /livez over HTTPS), kube-scheduler's."""
PLUGIN = "NodeResourceTopologyMatch"
DEFAULT_LEASE = "nrtmatch-scheduler"
CONFIG_HASH_ANNOTATION = "knuma.io/config-hash"
GUARANTEED_RESOURCES = {"cpu": "600m", "memory": "1200Mi"}
"""numaresources-operator's scheduler requests and limits under `scheduler-qos-request: guaranteed`."""
#: The scheduler's pods meet the `restricted` Pod Security level; the namespace enforces it.
POD_SECURITY_RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}


def scheduler_namespace(options: DeployOptions) -> str:
    if options.namespace:
        return options.namespace
    return "openshift-topology-aware-scheduler" if options.platform.platform.is_openshift else "tas-scheduler"


def leader_election_lease(options: DeployOptions) -> tuple[str, str]:
    """(namespace, name) of the Lease the replicas elect a leader with."""
    ns, _, name = options.leader_elect_resource.rpartition("/")
    return ns or scheduler_namespace(options), name or DEFAULT_LEASE


def scheduler_config(options: DeployOptions, api_version: str = "kubescheduler.config.k8s.io/v1") -> dict[str, Any]:
    """The KubeSchedulerConfiguration: one profile running NodeResourceTopologyMatch at filter, reserve and score."""
    cache = {"foreignPodsDetect": options.foreign_pods_detect, "resyncMethod": options.resync_method}
    if options.informer_mode is not None:
        cache["informerMode"] = options.informer_mode
    args: dict[str, Any] = {"cache": cache}
    if options.effective_resync_period > 0:
        args["cacheResyncPeriodSeconds"] = max(1, round(options.effective_resync_period))
    plugins: dict[str, Any] = {point: {"enabled": [{"name": PLUGIN}]} for point in ("filter", "reserve", "score")}
    if options.scoring_strategy is not None:
        kind, resources = options.scoring_strategy
        strategy: dict[str, Any] = {"type": kind}
        if resources:
            strategy["resources"] = [{"name": name, "weight": weight} for name, weight in resources]
        args["scoringStrategy"] = strategy
    elif options.scheduler is SchedulerVariant.KNUMA:
        own = knuma_profile()
        args["scoringStrategy"] = own["pluginConfig"][0]["args"]["scoringStrategy"]
        plugins["score"]["disabled"] = own["plugins"]["score"]["disabled"]
    if options.preemption_mode is not None:
        args["preemptionMode"] = options.preemption_mode
    leader: dict[str, Any] = {"leaderElect": options.leader_elect}
    if options.leader_elect:
        lease_ns, lease_name = leader_election_lease(options)
        leader.update(resourceName=lease_name, resourceNamespace=lease_ns)
    return {
        "apiVersion": api_version,
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": leader,
        "profiles": [
            {
                "schedulerName": options.profile_name,
                "plugins": plugins,
                "pluginConfig": [{"name": PLUGIN, "args": args}],
            }
        ],
    }


def config_text(config: dict[str, Any]) -> str:
    """Sorted keys, like upstream's `RenderConfig`, so the text (and its hash) is stable."""
    return yaml.safe_dump(config, sort_keys=True)


def config_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def placement(options: DeployOptions, pod_labels: dict[str, str]) -> dict[str, Any]:
    """Tolerate the control-plane taints and prefer control-plane nodes (required affinity would leave the scheduler
    Pending forever on managed clusters, which have no control-plane nodes); spread replicas across nodes."""
    out: dict[str, Any] = {}
    affinity: dict[str, Any] = {}
    if options.ctrlplane_affinity:
        out["tolerations"] = [
            {"key": f"node-role.kubernetes.io/{role_}", "operator": "Exists", "effect": "NoSchedule"}
            for role_ in ("control-plane", "master")
        ]
        affinity["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]
                    },
                }
            ]
        }
    if options.replicas > 1:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": dict(pod_labels)},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    if affinity:
        out["affinity"] = affinity
    return out


def scheduler_args(options: DeployOptions) -> list[str]:
    """`knuma scheduler`'s command line (the image's entry point is `knuma`). Everything else, leader election
    included, is in the configuration file, the one place the Role's Lease name also comes from."""
    # The secure port binds all interfaces (the probes come from the node; the NetworkPolicy admits only that port),
    # serves HTTPS with an in-memory self-signed certificate and asks the API server who may read /metrics, as
    # kube-scheduler does; the deprecated insecure port is off.
    return [
        "scheduler",
        f"--config={CONFIG_DIR}/{CONFIG_KEY}",
        f"--secure-port={SECURE_PORT}",
        "--metrics-port=0",
    ]


def scheduler_rbac(options: DeployOptions, ns: str) -> list[Manifest]:
    lease_ns, lease_name = leader_election_lease(options)
    rules = [
        rule([""], ["pods", "nodes", "namespaces"], ["get", "list", "watch"]),
        rule([""], ["pods"], ["patch"]),  # the DRA NUMA choice (and --explain) annotated before binding
        # DefaultPreemption: victims deleted, their DisruptionTarget condition and the preemptor's nominatedNodeName
        rule([""], ["pods"], ["delete"]),
        rule([""], ["pods/status"], ["patch"]),
        rule(["policy"], ["poddisruptionbudgets"], ["list", "watch"]),  # victims a budget protects come last
        rule(["topology.node.k8s.io"], ["noderesourcetopologies"], ["get", "list", "watch"]),
        # DynamicResources: read claims, slices and classes; PreBind writes the finalizer, allocation and reservedFor
        # (and DeviceTaintRules, at whichever version the cluster serves them)
        rule(
            ["resource.k8s.io"],
            ["resourceclaims", "resourceslices", "deviceclasses", "devicetaintrules"],
            ["get", "list", "watch"],
        ),
        rule(["resource.k8s.io"], ["resourceclaims", "resourceclaims/status"], ["update", "patch"]),
        # DRA-backed extended resources: PreBind creates the pod's claim; a failed bind, or a claim an earlier attempt
        # left, deletes it (and PreBind records it in the pod's status: pods/status patch, above)
        rule(["resource.k8s.io"], ["resourceclaims"], ["create", "delete"]),
        rule([""], ["pods/binding"], ["create"]),
        rule(["", "events.k8s.io"], ["events"], ["create", "patch"]),
        # the secure port's delegated authentication and authorization, as system:auth-delegator grants them
        rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
        rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
    ]
    lease_rules = [
        rule(["coordination.k8s.io"], ["leases"], ["create"]),
        rule(["coordination.k8s.io"], ["leases"], ["get", "update"], [lease_name]),
    ]
    elect = f"{NAME}-leader-elect"
    return [
        cluster_role(NAME, COMPONENT, rules),
        cluster_role_binding(NAME, COMPONENT, NAME, NAME, ns),
        role(elect, lease_ns, COMPONENT, lease_rules),
        role_binding(elect, lease_ns, COMPONENT, elect, NAME, ns),
    ]


def render_knuma_scheduler(options: DeployOptions) -> list[Manifest]:
    ns = scheduler_namespace(options)
    pod_labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "knuma"}
    text = config_text(scheduler_config(options))
    # over HTTPS on the secure port, as kube-scheduler's manifests probe it; /healthz, /readyz need no token
    probe = {
        "httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }
    mounts: list[Manifest] = [
        {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    container: Manifest = {
        "name": NAME,
        "image": options.images.knuma,
        "imagePullPolicy": options.pull_policy,
        "args": scheduler_args(options),
        "ports": [{"name": "https", "containerPort": SECURE_PORT, "protocol": "TCP"}],
        "livenessProbe": probe,
        "readinessProbe": {**probe, "httpGet": {"path": "/readyz", "port": "https", "scheme": "HTTPS"}},
        "resources": (
            {"requests": dict(GUARANTEED_RESOURCES), "limits": dict(GUARANTEED_RESOURCES)}
            if options.scheduler_guaranteed
            else {"requests": {"cpu": "200m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
        ),
        "securityContext": security_context(),
        "volumeMounts": mounts,
    }
    volumes: list[Manifest] = [
        {"name": "config", "configMap": {"name": CONFIG_MAP}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
    ]
    if options.resync_debug_dir:
        # numaresources-operator's scheduler Deployment: PFP_STATUS_DUMP and a Memory emptyDir there
        container["env"] = [{"name": RESYNC_DUMP_ENV, "value": options.resync_debug_dir}]
        mounts.append({"name": "pfpstatus", "mountPath": options.resync_debug_dir})
        volumes.append({"name": "pfpstatus", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}})
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(NAME, COMPONENT, ns),
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {
                    "labels": {**metadata(NAME, COMPONENT)["labels"], **pod_labels},
                    "annotations": {CONFIG_HASH_ANNOTATION: config_hash(text)},
                },
                "spec": {
                    "serviceAccountName": NAME,
                    "priorityClassName": "system-cluster-critical",
                    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": volumes,
                    **placement(options, pod_labels),
                },
            },
        },
    }
    return [
        namespace(ns, COMPONENT, extra_labels=POD_SECURITY_RESTRICTED),
        service_account(NAME, ns, COMPONENT),
        *scheduler_rbac(options, ns),
        *network_policies(NAME, ns, COMPONENT, pod_labels, ingress_ports=[("metrics", SECURE_PORT)]),
        config_map(CONFIG_MAP, ns, COMPONENT, {CONFIG_KEY: text}),
        deployment,
    ]
