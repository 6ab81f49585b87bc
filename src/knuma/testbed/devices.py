"""Device inventories for examples, tests and benchmarks: the k8srm prototype's pool shapes (its `pkg/gen/gen.go`)
and DGX-like nodes as `resource.k8s.io/v1` objects with their Node and NodeResourceTopology.

Prototype shapes (pool name `<node>-<base>-<NN>`, NN the NUMA index; attributes vendor, model, firmwareVersion,
driverVersion and `numa`, a string):

| shape | pools per node | devices per pool | driver | model |
|---|---|---|---|---|
| shape-zero | 1 | 2 | example.com-foozer | foozer-1000 |
| shape-one | 2 | 2 | example.com-foozer | foozer-1000 |
| shape-two | 4 | 4 | example.com-foozer | foozer-4000 |
| shape-three | 4 | 4 | example.com-barzer | barzer-1000 |
| shape-foozer-barzer | 4 NUMA x (foozer + barzer) | 2 | both | foozer-1000 / barzer-1000 |

DGX-like node: 2 sockets x 2 NUMA nodes, 8 PCIe roots, each with one GPU and one NIC (two roots per NUMA node),
NUMA distances 10 (local), 12 (same socket), 32 (other socket); CPUs and memory per NUMA node in the NRT.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "GPU_DRIVER",
    "NIC_DRIVER",
    "PROTOTYPE_SHAPES",
    "dgx_classes",
    "dgx_node",
    "prototype_pools",
]

GPU_DRIVER = "gpu.sim.knuma.io"
NIC_DRIVER = "nic.sim.knuma.io"
PROTOTYPE_API = "devmgmtproto.k8s.io/v1alpha1"

# shape -> (pools per node, devices per pool, [(driver, base, model, firmware)])
PROTOTYPE_SHAPES: dict[str, tuple[int, int, list[tuple[str, str, str, str]]]] = {
    "shape-zero": (1, 2, [("example.com-foozer", "foozer", "foozer-1000", "4.2.1-gen3")]),
    "shape-one": (2, 2, [("example.com-foozer", "foozer", "foozer-1000", "4.2.1-gen3")]),
    "shape-two": (4, 4, [("example.com-foozer", "foozer", "foozer-4000", "4.2.1-gen7")]),
    "shape-three": (4, 4, [("example.com-barzer", "barzer", "barzer-1000", "1.1.1")]),
    "shape-foozer-barzer": (
        4,
        2,
        [
            ("example.com-foozer", "foozer", "foozer-1000", "4.2.1-gen3"),
            ("example.com-barzer", "barzer", "barzer-1000", "1.1.1"),
        ],
    ),
}


def _attr(name: str, **value: Any) -> dict[str, Any]:
    return {"name": name, **value}


def prototype_pools(shape: str, nodes: int) -> list[dict[str, Any]]:
    """DevicePool objects of `nodes` nodes of a prototype shape (`GenShapeZero(n)` ...)."""
    if shape not in PROTOTYPE_SHAPES:
        raise ValueError(f"unknown prototype shape {shape!r}; expected one of {', '.join(PROTOTYPE_SHAPES)}")
    per_node, count, kinds = PROTOTYPE_SHAPES[shape]
    pools = []
    for i in range(nodes):
        node = f"{shape}-{i:02d}"
        for numa in range(per_node):
            for driver, base, model, firmware in kinds:
                pools.append(
                    {
                        "apiVersion": PROTOTYPE_API,
                        "kind": "DevicePool",
                        "metadata": {"name": f"{node}-{base}-{numa:02d}"},
                        "spec": {
                            "nodeName": node,
                            "driver": driver,
                            "attributes": [
                                _attr("vendor", stringValue="example.com"),
                                _attr("model", stringValue=model),
                                _attr("firmwareVersion", semVerValue=firmware),
                                _attr("driverVersion", semVerValue="1.8.2"),
                                _attr("numa", stringValue=str(numa)),
                            ],
                            "count": count,
                        },
                    }
                )
    return pools


def dgx_classes() -> list[dict[str, Any]]:
    """DeviceClasses `gpu.sim.knuma.io` and `nic.sim.knuma.io` selecting the simulated drivers' devices."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        }
        for driver in (GPU_DRIVER, NIC_DRIVER)
    ]


def _device(name: str, numa: int, root: str, extra: dict[str, Any], capacity: dict[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "resource.kubernetes.io/numaNode": {"int": numa},
            "resource.kubernetes.io/pcieRoot": {"string": root},
            **extra,
        },
        "capacity": {k: {"value": v} for k, v in capacity.items()},
    }


def dgx_node(
    name: str,
    *,
    policy: str = "single-numa-node",
    scope: str = "pod",
    sockets: int = 2,
    numa_per_socket: int = 2,
    roots_per_numa: int = 2,
    cpus_per_numa: int = 32,
    memory_per_numa_gi: int = 256,
) -> list[dict[str, Any]]:
    """A Node, its NodeResourceTopology and two ResourceSlices (GPUs, NICs): one GPU and one NIC per PCIe root."""
    numa_nodes = sockets * numa_per_socket
    gpus, nics = [], []
    for numa in range(numa_nodes):
        for r in range(roots_per_numa):
            index = numa * roots_per_numa + r
            root = f"pci0000:{index * 0x10 + 0x10:02x}"
            gpus.append(
                _device(
                    f"gpu-{index}",
                    numa,
                    root,
                    {"model": {"string": "A100-SXM4-80GB"}, "driverVersion": {"version": "550.54.15"}},
                    {"memory": "80Gi"},
                )
            )
            nics.append(_device(f"nic-{index}", numa, root, {"model": {"string": "ConnectX-6"}}, {"bandwidth": "200G"}))
    slices = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{driver.split('.')[0]}"},
            "spec": {
                "driver": driver,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "nodeName": name,
                "devices": devices,
            },
        }
        for driver, devices in ((GPU_DRIVER, gpus), (NIC_DRIVER, nics))
    ]

    def distance(a: int, b: int) -> int:
        if a == b:
            return 10
        return 12 if a // numa_per_socket == b // numa_per_socket else 32

    zones = []
    for numa in range(numa_nodes):
        cpu = str(cpus_per_numa)
        memory = f"{memory_per_numa_gi}Gi"
        zones.append(
            {
                "name": f"node-{numa}",
                "type": "Node",
                "costs": [{"name": f"node-{other}", "value": distance(numa, other)} for other in range(numa_nodes)],
                "resources": [
                    {"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                    {"name": "memory", "capacity": memory, "allocatable": memory, "available": memory},
                ],
            }
        )
    nrt = {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ],
        "zones": zones,
    }
    total_cpu = str(cpus_per_numa * numa_nodes)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "A100"}},
        "status": {"allocatable": {"cpu": total_cpu, "memory": f"{memory_per_numa_gi * numa_nodes}Gi", "pods": "110"}},
    }
    return [node, nrt, *slices]
