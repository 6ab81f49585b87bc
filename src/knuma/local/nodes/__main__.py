"""`python -m knuma.local.nodes`: run simulated NUMA nodes against an API server until SIGTERM/SIGINT.

`knuma up` starts this as a child process; it also works on its own against any `knuma apiserver` (without the node
proxy's `configz`, which only an in-process API server can route):

    python -m knuma.local.nodes --kubeconfig KUBECONFIG --cluster cluster.yaml --state-dir DIR [--sockets-dir DIR]
        [--nrt in-process|external] [--ready-file FILE]

`--cluster` is the simulator's cluster spec (node pools of shapes with a Topology Manager policy and scope). The
ready file is written once every node is registered, with the node count.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

import httpx2

from knuma.kube.client import KubeConfigError, async_client, async_http, transport_error
from knuma.kube.errors import KubeApiError
from knuma.local.nodes.fleet import Fleet, FleetSettings
from knuma.local.nodes.spec import nodes_of
from knuma.testbed.cluster import SpecError, cluster_from_dict, load_yaml

log = logging.getLogger("knuma.local.nodes")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m knuma.local.nodes", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--context")
    parser.add_argument("--cluster", required=True, type=Path, help="cluster spec YAML (pools of node shapes)")
    parser.add_argument("--state-dir", type=Path, help="node files and checkpoints")
    parser.add_argument("--sockets-dir", type=Path, help="serve PodResources per node on DIR/<node>.sock")
    parser.add_argument("--nrt", choices=("in-process", "external"), default="in-process")
    parser.add_argument("--lease-renew-interval", type=float, default=10.0)
    parser.add_argument(
        "--nrt-period", type=float, help="publish NRT only every SECONDS (in-process), never on a change"
    )
    parser.add_argument("--ready-file", type=Path)
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    try:
        cluster = cluster_from_dict(load_yaml(args.cluster), str(args.cluster))
        nodes = nodes_of(cluster)
        http = async_http(args.kubeconfig, args.context, timeout=30.0)
        client = async_client(args.kubeconfig, args.context, field_manager="knuma-exporter", timeout=30.0)
    except (SpecError, ValueError, KubeConfigError) as err:
        log.error("%s", err)
        return 2
    settings = FleetSettings(
        state_dir=args.state_dir,
        sockets_dir=args.sockets_dir,
        nrt=args.nrt,
        lease_renew_interval=args.lease_renew_interval,
        **({"nrt_resync_interval": args.nrt_period, "nrt_periodic_only": True} if args.nrt_period else {}),
    )
    fleet = Fleet(http, client, nodes, settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def announce() -> None:
        await fleet.ready.wait()
        if args.ready_file is not None:
            args.ready_file.write_text(f"{len(nodes)}\n")

    announcer = asyncio.create_task(announce())
    try:
        await fleet.run(stop)
    except (httpx2.HTTPError, KubeApiError) as err:
        # the error names the server and why: `cannot reach the API server at URL (...): connection refused`
        log.error("simulated nodes stopped: %s", transport_error(err) if isinstance(err, httpx2.HTTPError) else err)
        return 1
    finally:
        announcer.cancel()
        await http.aclose()
        await client.close()
    log.info("simulated nodes stopped")
    return 0


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
    )
    for noisy in ("httpx2", "httpcore2"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
