"""Supervising `knuma up`'s children: a child that dies is started again with backoff; only one that keeps dying
stops the cluster.

Why: one crashed exporter (or one `kill`) used to stop the whole local cluster. A real node agent under systemd or
the kubelet is restarted with backoff (the kubelet's CrashLoopBackOff: 10 s doubling to 5 min; systemd's
`Restart=on-failure` with `StartLimitBurst`), so `knuma up` does the same, faster because everything is local:

- the first restart after 1 s, then 2, 4, 8, 16, at most 30 s between tries;
- a child that failed `MAX_FAILURES` times within `WINDOW` seconds is given up on and the cluster stops (exit 1) with
  the last lines of its log, as before: something is wrong that a restart will not fix;
- every restart is logged with the exit code and counted; the live summary shows the counts;
- a restart asked for (`restart`: the deployed pod a child stands for was deleted, as `knuma e2e`'s restart tests
  do) is no failure: the child is started again after the first delay whatever came before, as a deleted pod's
  replacement starts without CrashLoopBackOff. Counting those stopped a cluster after five such tests in two minutes.

`RestartPolicy` is the pure decision; `Supervisor` applies it to `Child` processes.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from knuma.local.up.children import Child

__all__ = ["RestartPolicy", "Supervisor"]

log = logging.getLogger("knuma.local.up")


@dataclass(frozen=True)
class RestartPolicy:
    first_delay: float = 1.0
    max_delay: float = 30.0
    max_failures: int = 5
    window: float = 120.0

    def delay(self, recent_failures: int) -> float:
        """Seconds to wait before the next start, after `recent_failures` failures within the window."""
        return float(min(self.max_delay, self.first_delay * 2.0 ** max(0, recent_failures - 1)))

    def gives_up(self, recent_failures: int) -> bool:
        return recent_failures >= self.max_failures


@dataclass
class _State:
    failures: list[float] = field(default_factory=list)
    restart_at: float | None = None
    restarts: int = 0
    last_code: int | None = None
    requested: bool = False
    """Stopped by `restart`: its exit is no failure."""


class Supervisor:
    def __init__(self, policy: RestartPolicy | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or RestartPolicy()
        self.clock = clock
        self._states: dict[str, _State] = {}

    @property
    def restarts(self) -> dict[str, int]:
        """Child name -> times it was started again (only children restarted at least once)."""
        return {name: s.restarts for name, s in self._states.items() if s.restarts}

    def restart(self, child: Child) -> None:
        """Stop `child` (SIGTERM) to have it started again, without counting its exit as a failure."""
        self._states.setdefault(child.name, _State()).requested = True
        child.signal(signal.SIGTERM)

    def check(self, children: Iterable[Child]) -> Child | None:
        """Restart what is due; return a child that keeps failing (the cluster should stop), else None."""
        now = self.clock()
        for child in children:
            state = self._states.setdefault(child.name, _State())
            if state.restart_at is not None:
                if now >= state.restart_at:
                    state.restart_at = None
                    state.restarts += 1
                    child.start()
                    log.warning("%s started again (restart %d, pid %s)", child.name, state.restarts, child.pid)
                continue
            code = child.exited()
            if code is None:
                continue
            state.last_code = code
            if state.requested:
                state.requested = False
                state.restart_at = now + self.policy.first_delay
                delay = self.policy.first_delay
                log.info("%s stopped (exit %s) to be started again in %.0f s", child.name, code, delay)
                continue
            state.failures = [t for t in state.failures if now - t < self.policy.window] + [now]
            if self.policy.gives_up(len(state.failures)):
                log.error(
                    "%s exited with %s, %d times in %.0f s: giving up",
                    child.name,
                    code,
                    len(state.failures),
                    self.policy.window,
                )
                return child
            delay = self.policy.delay(len(state.failures))
            state.restart_at = now + delay
            log.warning(
                "%s exited with %s; restarting it in %.0f s. Last lines of %s:\n%s",
                child.name,
                code,
                delay,
                child.log_file,
                child.tail(),
            )
        return None
