"""`make bench`: run the benchmarks and write docs/benchmarks.md (machine, command, figures)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from knuma.bench import core


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def core_section() -> str:
    lines = [
        "## Scheduling core: Filter + Score per node",
        "",
        "One Guaranteed pod (4 CPUs, 8 GiB) against 500 nodes with the memory manager on, single-numa-node, container",
        "scope; the default profile (NodeResourcesFit + NodeResourceTopologyMatch with LeastAllocated), no sampling.",
        "Median of 5 rounds.",
        "",
        "| NUMA zones per node | nodes | feasible | µs per node (filter + score) |",
        "|---:|---:|---:|---:|",
    ]
    for result in core.run():
        lines.append(f"| {result.zones} | {result.nodes} | {result.feasible} | {result.microseconds_per_node:.1f} |")
    return "\n".join(lines)


SECTIONS: list[Callable[[], str]] = [core_section]


def render() -> str:
    parts = [
        "# Benchmarks",
        "",
        f"Machine: {machine()}.  ",
        f"Date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.  ",
        "Command: `make bench` (runs `python -m knuma.bench.report --output docs/benchmarks.md`).",
        "",
    ]
    for section in SECTIONS:
        print(f"running {section.__name__} ...", file=sys.stderr)
        parts += [section(), ""]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=Path("docs/benchmarks.md"))
    args = parser.parse_args(argv)
    text = render()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
