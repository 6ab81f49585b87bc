from knuma.api.pod import Pod
from knuma.scheduler.daemon.queue import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pod(name: str, priority: int = 0) -> Pod:
    return Pod.from_manifest(
        {"metadata": {"name": name}, "spec": {"priority": priority, "containers": [{"name": "c", "image": "x"}]}}
    )


def test_active_queue_orders_by_priority_then_arrival() -> None:
    clock = Clock()
    queue = SchedulingQueue(clock=clock)
    for name, priority in (("a", 0), ("b", 10), ("c", 0), ("d", 10)):
        queue.add(pod(name, priority))
        clock.now += 1
    order = []
    while (queued := queue.pop_ready()) is not None:
        order.append(queued.pod.name)
    assert order == ["b", "d", "a", "c"]


def test_unschedulable_pod_waits_for_an_event_then_its_backoff() -> None:
    clock = Clock()
    queue = SchedulingQueue(initial_backoff=1, max_backoff=10, clock=clock)
    queue.add(pod("a"))
    queued = queue.pop_ready()
    assert queued is not None
    queue.unschedulable(queued)
    clock.now += 100
    assert queue.pop_ready() is None  # no event: it stays parked
    queue.move_all()
    again = queue.pop_ready()
    assert again is not None and again.attempts == 2
    queue.unschedulable(again)
    queue.move_all()  # backoff after the 2nd attempt is 2 s: not before
    clock.now += 1.5
    assert queue.pop_ready() is None
    clock.now += 0.6
    assert queue.pop_ready() is not None


def test_event_during_the_cycle_is_not_lost() -> None:
    clock = Clock()
    queue = SchedulingQueue(initial_backoff=1, clock=clock)
    queue.add(pod("a"))
    queued = queue.pop_ready()
    assert queued is not None
    queue.move_all()  # e.g. a pod was deleted while "a" was being scheduled
    queue.unschedulable(queued)
    assert queue.counts()["unschedulable"] == 0
    clock.now += 1
    assert queue.pop_ready() is not None


def test_backoff_doubles_up_to_the_maximum() -> None:
    queue = SchedulingQueue(initial_backoff=1, max_backoff=10)
    queue.add(pod("a"))
    queued = queue.pop_ready()
    assert queued is not None
    durations = []
    for attempts in range(1, 7):
        queued.attempts = attempts
        durations.append(queue.backoff_duration(queued))
    assert durations == [1, 2, 4, 8, 10, 10]


def test_unschedulable_pods_are_flushed_after_the_maximum_wait() -> None:
    clock = Clock()
    queue = SchedulingQueue(max_unschedulable=300, clock=clock)
    queue.add(pod("a"))
    queued = queue.pop_ready()
    assert queued is not None
    queue.unschedulable(queued)
    clock.now += 299
    assert queue.pop_ready() is None
    clock.now += 2
    assert queue.pop_ready() is not None


def test_deleted_and_updated_pods() -> None:
    queue = SchedulingQueue()
    queue.add(pod("a"))
    queue.add(pod("b"))
    queue.delete("default/a")
    queue.add(pod("b", priority=5))  # an update keeps one entry
    popped = queue.pop_ready()
    assert popped is not None and popped.pod.name == "b" and popped.pod.priority == 5
    assert queue.pop_ready() is None
