"""The token bucket (`knuma.kube.ratelimit`), as client-go's `NewTokenBucketRateLimiter`."""

from __future__ import annotations

from knuma.kube.ratelimit import TokenBucket


def test_the_bucket_starts_full_and_refills_at_its_rate_up_to_its_burst() -> None:
    bucket = TokenBucket(qps=0.5, burst=2, now=0.0)
    assert bucket.try_accept(0.0) and bucket.try_accept(0.0)
    assert not bucket.try_accept(0.0)
    assert not bucket.try_accept(1.9)  # 0.95 of a token
    assert bucket.try_accept(2.0)
    assert not bucket.try_accept(2.0)
    # a long idle time refills only up to the burst
    assert bucket.try_accept(100.0) and bucket.try_accept(100.0)
    assert not bucket.try_accept(100.0)


def test_a_rate_of_zero_passes_its_burst_once_and_never_passes_nothing() -> None:
    """`rate.Limiter` with a zero limit spends its burst and stops (kube-controller-manager's `--node-eviction-rate
    0` taints one node per zone); `NewFakeNeverRateLimiter` never accepts."""
    zero = TokenBucket(qps=0.0, burst=1, now=0.0)
    assert zero.try_accept(0.0)
    assert not any(zero.try_accept(t) for t in (1.0, 10.0, 1e6))
    never = TokenBucket.never(now=0.0)
    assert not any(never.try_accept(t) for t in (0.0, 10.0, 1e6))
