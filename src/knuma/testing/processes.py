"""Ending a process a test started, and what that process started in turn, also when the test failed or timed out.

A process started with `start_new_session=True` leads a process group of its own, which can be signalled as a whole
(`os.killpg`) without reaching the test runner. SIGTERM comes first, so that the process can stop its own children in
order, SIGKILL after a grace period. A process group id is only used while it cannot name another group: while the
leader has not been reaped (a zombie keeps its pid), or while some member is still alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Any

__all__ = ["stop_group"]

POLL = 0.05


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
    """End `process`, started with `start_new_session=True`, and every process of its group: SIGTERM to the group,
    SIGKILL to what is left after `grace` seconds (or at once once the leader has exited, for helpers it left
    behind); then wait up to `settle` seconds for the group to be empty."""
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
