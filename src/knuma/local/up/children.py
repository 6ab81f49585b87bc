"""Child processes of `knuma up`: started in their own session with their output in a log file, stopped in order.

Children do not share the terminal's process group, so Ctrl-C reaches `knuma up` alone, which then stops them in
order (scheduler, exporters, nodes) and waits for each. Should `knuma up` itself die, Linux's parent-death signal
sends every child SIGTERM, so nothing is left running either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Child", "die_with_parent"]

log = logging.getLogger("knuma.local.up")

PR_SET_PDEATHSIG = 1


def die_with_parent(death_signal: int) -> None:
    """`preexec_fn` of a child (it runs between fork and exec): `death_signal` reaches the child when the thread that
    started it ends, the whole process killed included."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, death_signal)


class Child:
    def __init__(self, name: str, args: Sequence[str], log_file: Path, *, death_signal: int = signal.SIGTERM) -> None:
        """`death_signal`: what the child gets if `knuma up` dies; SIGKILL for a child that may be paused (a stopped
        process leaves SIGTERM pending for ever)."""
        self.name = name
        self.death_signal = death_signal
        self.args = list(args)
        self.log_file = log_file
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False
        """Stopped with SIGSTOP (`pause`): it stands for a process on a node cut off from the API server."""

    def start(self) -> Child:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with self.log_file.open("ab") as out:
            if self.process is not None:  # a restart: mark it in the log the new process appends to
                out.write(f"--- knuma up: starting {self.name} again ---\n".encode())
                out.flush()
            self.process = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=env,
                start_new_session=True,
                preexec_fn=functools.partial(die_with_parent, self.death_signal) if sys.platform == "linux" else None,
            )
        self.paused = False
        log.debug("started %s (pid %d): %s", self.name, self.process.pid, " ".join(self.args))
        return self

    def pause(self) -> None:
        """SIGSTOP: it does nothing (and writes nothing) until `resume`; a SIGTERM meanwhile waits for the resume, as
        a container on a partitioned node is restarted only once its kubelet is back."""
        if not self.paused and self.exited() is None:
            self.signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        """SIGCONT after `pause`."""
        if self.paused:
            self.paused = False
            self.signal(signal.SIGCONT)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def exited(self) -> int | None:
        """The exit code if the child has ended, else None."""
        return None if self.process is None else self.process.poll()

    def signal(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)

    def wait(self, timeout: float) -> bool:
        """Wait for the child to end; kill it after `timeout` seconds. True if it ended by itself."""
        if self.process is None:
            return True
        try:
            self.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop within %.0fs; killing it", self.name, timeout)
            self.process.kill()
            self.process.wait(5)
            return False

    def terminate(self) -> None:
        """SIGTERM, delivered at once even when paused."""
        self.signal(signal.SIGTERM)
        self.resume()

    def stop(self, timeout: float = 10.0) -> bool:
        self.terminate()
        return self.wait(timeout)

    def tail(self, lines: int = 5) -> str:
        """The last lines of the child's log, for error messages."""
        try:
            text = self.log_file.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def stop_all(children: Sequence[Child], timeout: float = 10.0) -> None:
    """SIGTERM to all, then wait for each (one shared deadline)."""
    for child in children:
        child.terminate()
    deadline = time.monotonic() + timeout
    for child in children:
        child.wait(max(0.1, deadline - time.monotonic()))
