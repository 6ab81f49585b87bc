"""Ending a process a test started, and what that process started in turn, also when the test failed or timed out.

A process started with `start_new_session=True` leads a process group of its own, which can be signalled as a whole
(`os.killpg`) without reaching the test runner. SIGTERM comes first, so that the process can stop its own children in
order, SIGKILL after a grace period. A process group id is only used while it cannot name another group: while the
leader has not been reaped (a zombie keeps its pid), or while some member is still alive.

Children that left the group for a session of their own (as `knuma up`'s do, so that Ctrl-C reaches `knuma up` alone)
are out of a group signal's reach; `stop_tree` holds a pidfd for each descendant before the stop, which names that
very process later even after it has been reparented, and kills those still running a while after the stop.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["alive", "descendants", "stop_group", "stop_tree"]

POLL = 0.05


def descendants(pid: int) -> set[int]:
    """Every live descendant of `pid`, read from /proc (Linux)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """The process runs (a zombie, waiting to be reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _exited(process: subprocess.Popen[Any], timeout: float) -> bool:
    """Wait up to `timeout` seconds for `process` to exit without reaping it, so that its pid, and the group id it
    gives its group, stay its own until `process.wait()`."""
    deadline = time.monotonic() + timeout
    while True:
        if process.returncode is not None:
            return True
        try:
            if os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped meanwhile
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def stop_group(process: subprocess.Popen[Any], grace: float, settle: float = 15.0) -> None:
    """End `process`, started with `start_new_session=True`, and every process of its group: SIGTERM to the group;
    SIGKILL to what is left as soon as the leader has exited (helpers it left behind), or after `grace` seconds if it
    has not; then wait up to `settle` seconds for the group to be empty."""
    if process.returncode is not None:  # reaped before: its group id names its group only while a member lives
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
    _signal_group(process.pid, signal.SIGTERM)
    _exited(process, grace)
    _signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(settle)
    deadline = time.monotonic() + settle
    while time.monotonic() < deadline:  # until the last member of the group is gone
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(POLL)


def _hold(pid: int) -> dict[int, int]:
    """A pidfd for each descendant of `pid`: opened, then kept only if the process is still a descendant (so the
    pidfd names the process that was looked up, not a later one that reused its pid)."""
    held: dict[int, int] = {}
    for child in descendants(pid):
        with contextlib.suppress(ProcessLookupError):
            held[child] = os.pidfd_open(child)
    for child in set(held) - descendants(pid):
        os.close(held.pop(child))
    return held


def _still_running(held: dict[int, int], timeout: float) -> set[int]:
    """The held processes that have not exited within `timeout` seconds (a pidfd turns readable when its process
    exits)."""
    running = dict(held)
    deadline = time.monotonic() + timeout
    while running:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        readable, _, _ = select.select(list(running.values()), [], [], left)
        running = {pid: fd for pid, fd in running.items() if fd not in readable}
    return set(running)


def stop_tree(process: subprocess.Popen[Any], grace: float, linger: float = 10.0) -> list[int]:
    """`stop_group`, and then the descendants `process` had when this was called, wherever they are now: those still
    running `linger` seconds after the group stopped are killed. Returns their pids (they outlived the process that
    started them: worth a warning)."""
    held = _hold(process.pid) if process.returncode is None and hasattr(os, "pidfd_open") else {}
    try:
        stop_group(process, grace)
        survivors = _still_running(held, linger)
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(held[pid], signal.SIGKILL)
        return sorted(survivors)
    finally:
        for fd in held.values():
            os.close(fd)
