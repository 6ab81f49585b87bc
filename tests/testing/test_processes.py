"""`stop_group` and `stop_tree` on real processes: SIGTERM first (the leader may clean up), SIGKILL after the grace
period, and the whole process group goes, also a member that ignores SIGTERM; a child in a session of its own goes
with its parent when it has a parent-death signal (as `knuma up`'s children), else `stop_tree` kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from knuma.testing.polling import eventually
from knuma.testing.processes import alive, stop_group, stop_tree

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc as on Linux")


def start(script: str) -> tuple[subprocess.Popen[str], list[int]]:
    """Run `script` in a session of its own; it prints the pids it wants the test to know, then `ready`."""
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    pids: list[int] = []
    for line in process.stdout:
        if line.strip() == "ready":
            return process, pids
        pids.append(int(line))
    raise AssertionError(f"the script exited with {process.wait()} before it was ready")


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_comes_first_and_lets_the_leader_clean_up(tmp_path: Path) -> None:
    marker = tmp_path / "cleaned-up"
    process, _ = start(
        f"""
        import signal, sys, time
        def stop(*_):
            open({str(marker)!r}, "w").close()
            sys.exit(0)
        signal.signal(signal.SIGTERM, stop)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    stop_group(process, grace=60.0)  # returns as soon as the leader exits; generous for a loaded machine
    assert process.returncode == 0
    assert marker.exists()
    assert not group_exists(process.pid)


def test_what_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    process, [member] = start(
        """
        import signal, subprocess, sys, time
        ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"
        child = subprocess.Popen([sys.executable, "-c", ignore], stdout=subprocess.PIPE)  # in the leader's group
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child.stdout.readline()  # the child ignores SIGTERM now
        print(child.pid, flush=True)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    assert os.getpgid(member) == process.pid
    stop_group(process, grace=0.5)
    assert process.returncode == -signal.SIGKILL
    assert not group_exists(process.pid)


def test_a_leader_that_is_gone_leaves_its_stragglers_no_chance() -> None:
    """The leader exits on SIGTERM at once; a member of its group that ignores SIGTERM is killed right after."""
    process, [member] = start(
        """
        import signal, subprocess, sys, time
        ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"
        child = subprocess.Popen([sys.executable, "-c", ignore], stdout=subprocess.PIPE)
        child.stdout.readline()
        print(child.pid, flush=True)
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    assert os.getpgid(member) == process.pid
    stop_group(process, grace=30.0)  # the grace is for the leader: the stop takes far less here
    assert process.returncode == -signal.SIGTERM
    assert not group_exists(process.pid)  # the member went too


SESSION_CHILD = """
import functools, signal, subprocess, sys, time
from knuma.local.up.children import die_with_parent
ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"
child = subprocess.Popen(
    [sys.executable, "-c", ignore],
    stdout=subprocess.PIPE,
    start_new_session=True,
    preexec_fn={preexec},
)
child.stdout.readline()
print(child.pid, flush=True)
print("ready", flush=True)
time.sleep(60)
"""


def test_a_child_in_its_own_session_that_outlives_the_leader_is_killed() -> None:
    process, [child] = start(SESSION_CHILD.format(preexec="None"))
    assert os.getsid(child) == child  # out of reach of the leader's group
    assert stop_tree(process, grace=60.0, linger=0.5) == [child]
    assert process.returncode == -signal.SIGTERM
    eventually(lambda: not alive(child), timeout=30.0, what="the killed child has ended")


def test_a_child_with_a_parent_death_signal_goes_with_the_leader() -> None:
    """As `knuma up`'s children: SIGKILL when the parent dies, nothing left for `stop_tree` to kill."""
    process, [child] = start(SESSION_CHILD.format(preexec="functools.partial(die_with_parent, signal.SIGKILL)"))
    assert os.getsid(child) == child
    assert stop_tree(process, grace=60.0, linger=30.0) == []
    assert not alive(child)
