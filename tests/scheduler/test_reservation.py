from knuma.api.fingerprint import compute
from knuma.scheduler.cache.reservation import reconcile

NAMES = {k: ("default", k.split("/")[1]) for k in ("default/a", "default/b", "default/c", "default/d")}


def test_up_to_date_nrt_reflects_every_pod() -> None:
    fp = compute([NAMES["default/a"], NAMES["default/b"]])
    out = reconcile(fp, reflected=["default/a"], pending=["default/b"], names=NAMES)
    assert out is not None and out.reflected == {"default/a", "default/b"} and out.pending == ()


def test_nrt_reflecting_a_prefix_of_the_pending_pods() -> None:
    fp = compute([NAMES["default/a"], NAMES["default/b"]])
    out = reconcile(fp, reflected=["default/a"], pending=["default/b", "default/c", "default/d"], names=NAMES)
    assert out is not None and out.pending == ("default/c", "default/d")


def test_started_pods_out_of_bind_order() -> None:
    fp = compute([NAMES["default/a"], NAMES["default/c"]])
    out = reconcile(fp, reflected=["default/a"], pending=["default/b", "default/c"], started=["default/c"], names=NAMES)
    assert out is not None and out.pending == ("default/b",)


def test_deleted_pod_still_listed_by_the_kubelet() -> None:
    fp = compute([NAMES["default/a"], NAMES["default/b"]])
    out = reconcile(fp, reflected=["default/a"], pending=[], gone=["default/b"], names=NAMES)
    assert out is not None and out.reflected == {"default/a"}


def test_unknown_fingerprint_matches_nothing() -> None:
    out = reconcile(compute([("x", "y")]), reflected=["default/a"], pending=["default/b"], names=NAMES)
    assert out is None
