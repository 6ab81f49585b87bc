"""A process's memory as the kernel reports it in `/proc/PID/status`, for the benchmarks that state memory targets.

`VmRSS` is resident now, `VmHWM` the most ever resident. Both belong to the process's current address space, unlike
`ru_maxrss`, which Linux carries across fork and exec (a benchmark child would report its parent's peak).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["memory_status"]


def memory_status(pid: int) -> dict[str, int]:
    """The memory lines of /proc/PID/status (`VmRSS`, `VmHWM`, `RssAnon`, ...), in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.startswith(("Vm", "Rss")) and value.strip().endswith("kB"):
            out[key] = int(value.split()[0]) * 1024
    if "VmRSS" not in out:
        raise RuntimeError(f"no VmRSS for pid {pid}")
    return out
