"""Built-in scenarios, written as the same specs a user would put in a YAML file.

| name | what it shows |
|---|---|
| `default` | a small mixed cluster filled by a Poisson stream of long-running pods; small enough for `optimal` |
| `burst` | 1200 pods arrive at once: back-to-back decisions on the same stale NRT |
| `lag60` | churn (pods come and go) with the exporter's default 60 s period, and a ReplicaSet-like controller |
| `fragmented` | 8-NUMA machines with small zones and awkward pod sizes |
| `devices` | GPU nodes: CPUs, memory and GPUs aligned on one NUMA zone |
| `restricted` | `restricted` policy, pod scope: wide pods span zones, the others must fit one zone |
| `smt` | half the nodes have the CPU manager's `full-pcpus-only`: odd CPU counts fail there (`SMTAlignmentError`) |
| `restart` | `lag60` with a scheduler restart every 5 minutes: state rebuilt from stale NRTs and the bound pods |
"""

from __future__ import annotations

from typing import Any

from knuma.sim.spec import Scenario, scenario_from_dict

__all__ = ["BUILTIN", "DRA_SCENARIO", "builtin_scenario", "scenario_names"]

DRA_SCENARIO = "dra"
"""The device scenario (`knuma.sim.dra`), run by its own comparison rather than from `BUILTIN`."""


def _g(name: str, cpu: int, memory: str, weight: float, **extra: Any) -> dict[str, Any]:
    """A Guaranteed single-container template."""
    requests: dict[str, Any] = {"cpu": str(cpu), "memory": memory}
    requests.update(extra.pop("resources", {}))
    return {"name": name, "qos": "Guaranteed", "requests": requests, "weight": weight, **extra}


def _sidecar_pod(name: str, app_cpu: int, sidecar_cpu: int, weight: float, **extra: Any) -> dict[str, Any]:
    """A Guaranteed pod with an init container, a restartable sidecar and an app container (a real Pod manifest)."""

    def resources(cpu: int, memory: str) -> dict[str, Any]:
        return {"requests": {"cpu": str(cpu), "memory": memory}, "limits": {"cpu": str(cpu), "memory": memory}}

    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "initContainers": [
                {"name": "setup", "image": "busybox", "resources": resources(2, "1Gi")},
                {
                    "name": "proxy",
                    "image": "envoy",
                    "restartPolicy": "Always",
                    "resources": resources(sidecar_cpu, "1Gi"),
                },
            ],
            "containers": [{"name": "app", "image": "app", "resources": resources(app_cpu, f"{2 * app_cpu}Gi")}],
        },
    }
    return {"name": name, "manifest": manifest, "weight": weight, **extra}


_BURSTABLE = {"name": "burstable", "qos": "Burstable", "requests": {"cpu": "500m", "memory": "1Gi"}, "weight": 1}
_BEST_EFFORT = {"name": "besteffort", "qos": "BestEffort", "requests": {}, "weight": 0.5}

BUILTIN: dict[str, dict[str, Any]] = {
    "default": {
        "description": (
            "24 nodes (2-socket, 4-NUMA, 8-NUMA; single-numa-node), 390 long-running pods arriving at 2/s, "
            "exporter period 60 s; small enough for the CP-SAT optimum"
        ),
        "cluster": {
            "pools": [
                {"name": "socket2", "shape": "two-socket", "count": 12},
                {"name": "numa4", "shape": "four-numa", "count": 8},
                {"name": "numa8", "shape": "eight-numa", "count": 4},
            ]
        },
        "workload": {
            "pods": 390,
            "arrival": {"process": "poisson", "rate": 2},
            "templates": [
                _g("g2", 2, "4Gi", 3),
                _g("g4", 4, "8Gi", 3),
                _g("g6", 6, "12Gi", 2),
                _g("g8", 8, "16Gi", 1.5),
                _g("g12-hugepages", 12, "8Gi", 0.5, resources={"hugepages-1Gi": "8Gi"}),
                _sidecar_pod("g4-sidecar", 4, 1, 1),
                _BURSTABLE,
                _BEST_EFFORT,
            ],
        },
        "optimal": True,
    },
    "burst": {
        "description": "80 nodes, 1200 pods created at once (a Job or a scale-up): many decisions between NRT updates",
        "cluster": {
            "pools": [
                {"name": "socket2", "shape": "two-socket", "count": 40},
                {"name": "numa4", "shape": "four-numa", "count": 30},
                {"name": "numa8", "shape": "eight-numa", "count": 10},
            ]
        },
        "workload": {
            "pods": 1200,
            "arrival": {"process": "burst"},
            "templates": [
                _g("g2", 2, "4Gi", 3),
                _g("g4", 4, "8Gi", 3),
                _g("g6", 6, "12Gi", 2),
                _g("g8", 8, "16Gi", 2),
                _sidecar_pod("g4-sidecar", 4, 1, 1),
                _BURSTABLE,
            ],
        },
        "optimal": False,
    },
    "lag60": {
        "description": (
            "40 nodes with churn: 1.2 pods/s, ~8 min lifetimes, exporter every 60 s, failed pods recreated by their "
            "ReplicaSet (up to 3 times each)"
        ),
        "cluster": {
            "pools": [
                {"name": "socket2", "shape": "two-socket", "count": 20},
                {"name": "numa4", "shape": "four-numa", "count": 20},
            ]
        },
        "workload": {
            "pods": 1800,
            "arrival": {"process": "poisson", "rate": 1.2},
            "templates": [
                _g("g2", 2, "4Gi", 2, lifetime={"distribution": "exponential", "mean": 480}),
                _g("g4", 4, "8Gi", 3, lifetime={"distribution": "exponential", "mean": 480}),
                _g("g8", 8, "16Gi", 2, lifetime={"distribution": "exponential", "mean": 480}),
                _g("g12", 12, "24Gi", 1, lifetime={"distribution": "exponential", "mean": 480}),
                _sidecar_pod("g4-sidecar", 4, 1, 1, lifetime={"distribution": "exponential", "mean": 480}),
                {**_BURSTABLE, "lifetime": {"distribution": "exponential", "mean": 480}},
            ],
        },
        "nrtPeriod": 60,
        "duration": 1800,
        "recreate": {"enabled": True, "delay": 10, "maxPerPod": 3},
        "optimal": False,
    },
    "fragmented": {
        "description": "16 eight-NUMA nodes (11-12 CPUs per zone) and pods of 5, 6, 7 and 10 CPUs: zones strand easily",
        "cluster": {"pools": [{"name": "numa8", "shape": "eight-numa", "count": 16}]},
        "workload": {
            "pods": 240,
            "arrival": {"process": "poisson", "rate": 2},
            "templates": [
                _g("g5", 5, "10Gi", 2),
                _g("g6", 6, "12Gi", 2),
                _g("g7", 7, "14Gi", 1),
                _g("g10", 10, "20Gi", 1),
                _g("g3", 3, "6Gi", 1),
            ],
        },
        "optimal": True,
    },
    "devices": {
        "description": (
            "12 GPU nodes (4 GPUs per zone) and 4 CPU nodes; GPU pods need CPUs, memory and GPUs on one zone, "
            "CPU-only pods compete for the GPU zones' CPUs"
        ),
        "cluster": {
            "pools": [
                {"name": "gpu", "shape": "gpu", "count": 12},
                {"name": "cpu", "shape": "two-socket", "count": 4},
            ]
        },
        "workload": {
            "pods": 72,
            "arrival": {"process": "poisson", "rate": 2},
            "templates": [
                _g("gpu1", 8, "32Gi", 3, resources={"nvidia.com/gpu": 1}),
                _g("gpu2", 16, "64Gi", 2, resources={"nvidia.com/gpu": 2}),
                _g("gpu3", 20, "96Gi", 1, resources={"nvidia.com/gpu": 3}),
                _g("gpu4", 24, "128Gi", 1, resources={"nvidia.com/gpu": 4}),
                _g("cpu16", 16, "32Gi", 2),
                _BURSTABLE,
            ],
        },
        "optimal": True,
    },
    "restricted": {
        "description": (
            "30 nodes with the restricted policy and pod scope, churn: upstream does not filter restricted nodes"
        ),
        "cluster": {
            "pools": [
                {"name": "socket2", "shape": "two-socket", "count": 20, "policy": "restricted", "scope": "pod"},
                {"name": "numa4", "shape": "four-numa", "count": 10, "policy": "restricted", "scope": "pod"},
            ]
        },
        "workload": {
            "pods": 900,
            "arrival": {"process": "poisson", "rate": 1.0},
            "templates": [
                _g("g4", 4, "8Gi", 3, lifetime={"distribution": "exponential", "mean": 600}),
                _g("g8", 8, "16Gi", 2, lifetime={"distribution": "exponential", "mean": 600}),
                _g("g20", 20, "40Gi", 1, lifetime={"distribution": "exponential", "mean": 600}),
                _g("g40-wide", 40, "80Gi", 0.5, lifetime={"distribution": "exponential", "mean": 600}),
                {**_BURSTABLE, "lifetime": {"distribution": "exponential", "mean": 600}},
            ],
        },
        "duration": 900,
        "optimal": False,
    },
    "smt": {
        "description": (
            "24 two-socket nodes, half with the CPU manager's full-pcpus-only (OpenShift performance profiles): pods "
            "with an odd number of CPUs are rejected there with SMTAlignmentError unless the scheduler knows"
        ),
        "cluster": {
            "shapes": {
                "two-socket-smt": {
                    "numaZones": 2,
                    "cpusPerZone": 32,
                    "memoryPerZone": "128Gi",
                    "reservedCPUs": 2,
                    "reservedMemoryPerZone": "2Gi",
                    "cpuManagerPolicyOptions": {"full-pcpus-only": "true"},
                    "description": "two-socket with full-pcpus-only: exclusive CPUs in whole cores only",
                }
            },
            "pools": [
                {"name": "smt", "shape": "two-socket-smt", "count": 12},
                {"name": "plain", "shape": "two-socket", "count": 12},
            ],
        },
        "workload": {
            "pods": 300,
            "arrival": {"process": "poisson", "rate": 2},
            "templates": [
                _g("g2", 2, "4Gi", 3),
                _g("g3", 3, "6Gi", 2),
                _g("g4", 4, "8Gi", 3),
                _g("g5", 5, "10Gi", 1.5),
                _g("g8", 8, "16Gi", 1.5),
                _BURSTABLE,
            ],
        },
        "optimal": False,
    },
}


BUILTIN["preemption"] = {
    "description": (
        "24 nodes filled by batch pods (priority 0, 5 s to stop) while latency-critical pods (priority 1000, 8 and 12 "
        "CPUs) keep arriving: they get in only by preemption, and only evicting the pods on one NUMA zone helps"
    ),
    "cluster": BUILTIN["default"]["cluster"],
    "workload": {
        "pods": 420,
        "arrival": {"process": "poisson", "rate": 2},
        "templates": [
            _g("batch2", 2, "4Gi", 3, priority=0, terminationGracePeriodSeconds=5),
            _g("batch4", 4, "8Gi", 3, priority=0, terminationGracePeriodSeconds=5),
            _g("batch6", 6, "12Gi", 2, priority=0, terminationGracePeriodSeconds=5),
            _g("critical8", 8, "16Gi", 0.75, priority=1000),
            _g("critical12", 12, "24Gi", 0.5, priority=1000),
        ],
    },
    "recreate": {"enabled": True, "delay": 10, "maxPerPod": 3},
    "optimal": False,
}

BUILTIN["restart"] = {
    "description": (
        "lag60 with the scheduler restarting every 5 minutes: each time it starts again from the published NRTs (up "
        "to 60 s old) and the pods bound to nodes, without its reservations"
    ),
    **{key: value for key, value in BUILTIN["lag60"].items() if key != "description"},
    "schedulerRestarts": [300, 600, 900, 1200, 1500],
}


def scenario_names() -> list[str]:
    return list(BUILTIN)


def builtin_scenario(name: str) -> Scenario:
    try:
        raw = BUILTIN[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; built-in scenarios: {', '.join(BUILTIN)}") from None
    return scenario_from_dict({"name": name, **raw})
