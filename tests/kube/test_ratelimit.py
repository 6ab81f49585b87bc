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


def test_a_rate_of_zero_never_accepts() -> None:
    bucket = TokenBucket(qps=0.0, burst=1, now=0.0)
    assert not any(bucket.try_accept(t) for t in (0.0, 10.0, 1e6))
