"""The kubelet of the README's exporter example, as a real gRPC PodResources server on a unix socket.

    python examples/exporter/fake-kubelet.py /tmp/kubelet.sock

The static CPU manager with `reservedSystemCPUs: "0,1"` on the two-socket Xeon L5640 of
`tests/fixtures/sysfs/linux-amd64-intel-xeon-L5640.tar.gz` (CPUs 2-23 allocatable), 30 GiB of memory-manager memory
and 4 NIC VFs per NUMA node; one Guaranteed pod `default/app-1` holding CPUs 2,4,6,8, 4 GiB and one VF on node 0, a
Burstable pod (no exclusive resources), and the finished Job pod `batch/report-28930`, which a kubelet older than
1.34 still lists with CPUs 10,12,14,16 and 8 GiB. Runs until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import signal
import sys

from knuma.podresources.model import Allocatable, Container, Devices, Memory, Pod
from knuma.podresources.server import PodResourcesServer

GI = 1 << 30
NIC = "example.com/nic"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/exporter/fake-kubelet.py SOCKET_PATH")
    allocatable = Allocatable(
        cpu_ids=tuple(range(2, 24)),
        devices=(Devices(NIC, ("vf0", "vf1", "vf2", "vf3"), (0,)), Devices(NIC, ("vf4", "vf5", "vf6", "vf7"), (1,))),
        memory=(Memory("memory", 30 * GI, (0,)), Memory("memory", 30 * GI, (1,))),
    )
    pods = [
        Pod(
            "default",
            "app-1",
            (Container("app", (2, 4, 6, 8), (Devices(NIC, ("vf0",), (0,)),), (Memory("memory", 4 * GI, (0,)),)),),
        ),
        Pod("default", "burst-1", (Container("c"),)),
        Pod("batch", "report-28930", (Container("r", (10, 12, 14, 16), (), (Memory("memory", 8 * GI, (0,)),)),)),
    ]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    with PodResourcesServer(sys.argv[1], allocatable=allocatable, pods=pods) as kubelet:
        print(f"PodResources API on {kubelet.address}; Ctrl-C stops it", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
