"""`knuma up`'s supervisor with real child processes: restart with backoff, count, give up on a crash loop."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from knuma.local.up.children import Child
from knuma.local.up.supervisor import RestartPolicy, Supervisor


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _wait_exit(child: Child) -> None:
    deadline = time.monotonic() + 10
    while child.exited() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.exited() is not None


def test_backoff_doubles_up_to_a_cap_and_gives_up_after_a_burst() -> None:
    policy = RestartPolicy()
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert not policy.gives_up(4) and policy.gives_up(5)


def test_a_dead_child_is_restarted_after_its_delay_and_counted(tmp_path: Path) -> None:
    clock = Clock()
    supervisor = Supervisor(clock=clock)
    child = Child("worker", [sys.executable, "-c", "import sys; sys.exit(3)"], tmp_path / "worker.log").start()
    _wait_exit(child)
    first_pid = child.pid
    assert supervisor.check([child]) is None  # failure 1: restart due in 1 s
    assert child.pid == first_pid and supervisor.restarts == {}
    clock.now += 0.5
    assert supervisor.check([child]) is None and child.pid == first_pid
    clock.now += 0.6
    assert supervisor.check([child]) is None
    assert child.pid != first_pid and supervisor.restarts == {"worker": 1}
    _wait_exit(child)
    assert "starting worker again" in (tmp_path / "worker.log").read_text()


def test_a_child_that_keeps_failing_is_given_up_on(tmp_path: Path) -> None:
    clock = Clock()
    supervisor = Supervisor(RestartPolicy(max_failures=3, window=60), clock=clock)
    child = Child("crasher", [sys.executable, "-c", "raise SystemExit(1)"], tmp_path / "crasher.log").start()
    given_up = None
    for _ in range(10):
        _wait_exit(child)
        given_up = supervisor.check([child])  # records the failure (or gives up)
        if given_up is not None:
            break
        clock.now += 5  # past the backoff (1 s, then 2 s), well within the window
        supervisor.check([child])  # the restart is due
    assert given_up is child
    assert supervisor.restarts == {"crasher": 2}


def test_failures_far_apart_never_give_up(tmp_path: Path) -> None:
    clock = Clock()
    supervisor = Supervisor(RestartPolicy(max_failures=2, window=60), clock=clock)
    child = Child("rare", [sys.executable, "-c", "pass"], tmp_path / "rare.log").start()
    for _ in range(4):
        _wait_exit(child)
        assert supervisor.check([child]) is None
        clock.now += 61
        supervisor.check([child])
    assert supervisor.restarts == {"rare": 4}


def test_restarts_asked_for_are_not_failures(tmp_path: Path) -> None:
    """A deployed pod's deletion restarts the child it stands for (`knuma e2e`'s restart tests): as often as asked,
    each after the first delay, and never a reason to stop the cluster."""
    clock = Clock()
    supervisor = Supervisor(RestartPolicy(max_failures=3, window=60), clock=clock)
    child = Child("scheduler", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log").start()
    for restart in range(1, 6):
        pid = child.pid
        supervisor.restart(child)
        _wait_exit(child)
        assert supervisor.check([child]) is None and child.pid == pid  # due after the first delay, not before
        clock.now += 1.0
        assert supervisor.check([child]) is None
        assert child.pid != pid and supervisor.restarts == {"scheduler": restart}
    # a crash afterwards is the first failure: the first delay again
    child.signal()
    _wait_exit(child)
    pid = child.pid
    assert supervisor.check([child]) is None
    clock.now += 1.0
    assert supervisor.check([child]) is None and child.pid != pid
    child.stop()
