"""The compared schedulers' simulations in worker processes (`knuma simulate --jobs N`).

Each online scheduler's simulation is independent of the others (the same scenario and seed, so the same arrivals,
and its own fresh cluster), and deterministic for the seed, so running them in separate processes gives the same
placements and metrics as running them one after the other, in less wall time when the machine has several cores.

How it runs: `jobs` worker processes (at most one per scheduler) are started, each a fresh interpreter running
`serve` (nothing of the parent's threads, locks or main module is inherited or re-run, unlike multiprocessing's
`fork` and `spawn`), connected to the parent by a socket pair carrying pickles (`multiprocessing.connection`).
Each gets the scenario and seed once, then one scheduler at a time (costliest first, `DISPATCH_ORDER`), the next
to whichever worker finishes first. A worker sends back progress, then the `RunResult` and its metrics (or the
error); only the metrics when the caller does not keep the runs (`keep_runs`: at 5000 nodes a run's pods and
kubelets take seconds to pickle and unpickle). The first error stops the whole run: every worker is terminated (and
killed if it does not exit), the error is raised in the parent with the scheduler's name, and no process is left
behind; a worker that dies without answering (killed, out of memory) is reported the same way.
"""

from __future__ import annotations

import os
import pickle
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from knuma.errors import InvalidInput, KnumaError, OperationFailed
from knuma.sim.engine import RunResult, run
from knuma.sim.metrics import compute
from knuma.sim.spec import Scenario

__all__ = ["DISPATCH_ORDER", "Simulated", "WorkerFailed", "available_cpus", "serve", "simulate", "simulate_one"]

Progress = Callable[[str, float], None]

DISPATCH_ORDER = ("nrt-overreserve", "knuma", "nrt-discardreserved", "nrt-passthrough", "default")
"""The order workers get the schedulers in, costliest first (CPU seconds at 5000 nodes and 50,000 arrivals: about 48,
31, 30, 30 and 14): the longest simulations start first, so that the last to finish is a short one (what keeps
two workers busy to the end). Results come back in the order asked for whatever this order; other names go last, in
their given order."""

_STOP_GRACE = 5.0
"""Seconds a terminated worker gets to exit before it is killed."""


class WorkerFailed(OperationFailed):
    """A worker process died without sending its result (killed, out of memory, crashed)."""


@dataclass
class Simulated:
    """One scheduler's simulation: the run, its metrics, and the CPU and wall seconds it took in its process."""

    result: RunResult | None
    """None when the caller did not ask to keep the runs (`keep_runs`): only the metrics come back from a worker,
    not every pod and kubelet (seconds of pickling at 5000 nodes)."""
    metrics: dict[str, Any]
    cpu_seconds: float
    wall_seconds: float


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; the machine's count where there is no such call)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def simulate_one(
    scenario: Scenario,
    name: str,
    seed: int,
    progress: Callable[[float], None] | None = None,
    *,
    keep_run: bool = True,
) -> Simulated:
    """Simulate `scenario` with scheduler `name` in this process, and compute its metrics."""
    started, cpu = time.perf_counter(), time.process_time()
    result = run(scenario, name, seed, progress=progress)
    metrics = compute(result, [t.pod for t in scenario.workload.templates])
    kept = result if keep_run else None
    return Simulated(kept, metrics, time.process_time() - cpu, time.perf_counter() - started)


def simulate(
    scenario: Scenario,
    names: Sequence[str],
    seed: int,
    *,
    jobs: int = 1,
    progress: Progress | None = None,
    keep_runs: bool = True,
) -> dict[str, Simulated]:
    """Every scheduler in `names` on `scenario` and `seed`, in `names` order; in up to `jobs` worker processes when
    `jobs` > 1 and there is more than one scheduler, else one after the other in this process. `keep_runs` False:
    only the metrics are kept (what a table or the JSON document needs; plots and the optimum's hint need the
    runs)."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if jobs == 1 or len(names) <= 1:
        out = {}
        for name in names:

            def report(fraction: float, name: str = name) -> None:
                if progress is not None:
                    progress(name, fraction)

            out[name] = simulate_one(scenario, name, seed, report, keep_run=keep_runs)
        return out
    return _Pool(scenario, seed, min(jobs, len(names)), progress, keep_runs).simulate(names)


_BOOT = "import sys; from knuma.sim.parallel import serve; serve(int(sys.argv[1]))"
"""What a worker process runs: a fresh interpreter that imports only the simulator (not the parent's main module)."""


class _Pool:
    def __init__(self, scenario: Scenario, seed: int, workers: int, progress: Progress | None, keep_runs: bool) -> None:
        self.scenario, self.seed, self.workers, self.progress = scenario, seed, workers, progress
        self.keep_runs = keep_runs
        self.pipes: dict[Connection, subprocess.Popen[bytes]] = {}
        self.busy: dict[Connection, str] = {}

    def simulate(self, names: Sequence[str]) -> dict[str, Simulated]:
        rank = {name: i for i, name in enumerate(DISPATCH_ORDER)}
        todo = sorted(names, key=lambda name: rank.get(name, len(rank)))  # stable: unknown names keep their order
        done: dict[str, Simulated] = {}
        try:
            for _ in range(self.workers):
                pipe = self._start()
                pipe.send((self.scenario, self.seed, self.keep_runs))
                self._next(pipe, todo)
            while self.busy:
                for ready in wait(list(self.busy)):
                    assert isinstance(ready, Connection)
                    self._receive(ready, todo, done)
        finally:
            self._stop()
        return {name: done[name] for name in names}

    def _start(self) -> Connection:
        ours, theirs = socket.socketpair()
        with theirs:
            process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        pipe = Connection(ours.detach())
        self.pipes[pipe] = process
        return pipe

    def _next(self, pipe: Connection, todo: list[str]) -> None:
        if todo:
            name = todo.pop(0)
            self.busy[pipe] = name
            pipe.send(name)

    def _receive(self, pipe: Connection, todo: list[str], done: dict[str, Simulated]) -> None:
        name = self.busy[pipe]
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            process = self.pipes[pipe]
            try:
                code: int | None = process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
            raise WorkerFailed(
                f"the worker process simulating {name} exited without a result (exit status {code})"
            ) from None
        kind = message[0]
        if kind == "progress":
            if self.progress is not None:
                self.progress(name, message[1])
            return
        if kind == "error":
            raise _error(name, message[1], message[2])
        done[name] = message[1]
        del self.busy[pipe]
        self._next(pipe, todo)

    def _stop(self) -> None:
        """Ask idle workers to exit, terminate busy ones (after an error), kill any that does not exit in time."""
        for pipe, process in self.pipes.items():
            if pipe in self.busy:
                process.terminate()
            else:
                try:
                    pipe.send(None)
                except OSError:
                    process.terminate()
        deadline = time.monotonic() + _STOP_GRACE
        for pipe, process in self.pipes.items():
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            pipe.close()


def _error(name: str, raised: bytes | None, text: str) -> Exception:
    """The worker's error in the parent, with the scheduler named: a knuma error keeps its class where it can (so the
    CLI's exit status is the one a single-process run gives), else its branch (`InvalidInput`, else
    `OperationFailed`); anything else becomes `OperationFailed`."""
    message = f"simulating {name}: {text}"
    try:
        err = pickle.loads(raised) if raised is not None else None
    except Exception:
        err = None
    if isinstance(err, KnumaError):
        try:
            return type(err)(message)
        except Exception:
            return InvalidInput(message) if isinstance(err, InvalidInput) else OperationFailed(message)
    return OperationFailed(message)


def serve(fd: int) -> None:
    """A worker process (`_BOOT`): the scenario and seed arrive first on the socket `fd`, then the schedulers to
    simulate one at a time, until None. Ctrl-C is the parent's to handle (it terminates its workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pipe = Connection(fd)
    try:
        scenario, seed, keep_runs = pipe.recv()
    except EOFError:
        return  # the parent is gone
    _work(pipe, scenario, seed, keep_runs)
    pipe.close()
    os._exit(0)  # skip tearing down the simulation's objects one by one: nothing is left to flush


def _work(pipe: Connection, scenario: Scenario, seed: int, keep_runs: bool) -> None:
    while True:
        try:
            name = pipe.recv()
        except EOFError:
            return  # the parent is gone
        if name is None:
            return
        try:
            simulated = simulate_one(
                scenario, name, seed, lambda fraction: pipe.send(("progress", fraction)), keep_run=keep_runs
            )
        except Exception as err:
            text = str(err) if isinstance(err, KnumaError) else f"{type(err).__name__}: {err}".splitlines()[0]
            try:
                raised: bytes | None = pickle.dumps(err) if isinstance(err, KnumaError) else None
            except Exception:
                raised = None
            pipe.send(("error", raised, text or type(err).__name__))
            return
        pipe.send(("done", simulated))
