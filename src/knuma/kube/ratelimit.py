"""A token bucket, as client-go's `flowcontrol.NewTokenBucketRateLimiter` (`golang.org/x/time/rate` underneath).

The bucket starts full (`burst` tokens) and refills at `qps` tokens per second up to `burst`; an action that finds a
token takes it. With a `qps` of 0 the first `burst` actions pass and no other (`rate.Limiter` with a zero limit);
`TokenBucket.never` accepts nothing (`flowcontrol.NewFakeNeverRateLimiter`, what the node lifecycle controller swaps
in to stop tainting). Time is passed in, so the callers' clocks (and tests) decide it.
"""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = max(0.0, qps)
        self.burst = burst
        self.tokens = float(burst)
        self._last = now

    @classmethod
    def never(cls, now: float) -> TokenBucket:
        return cls(0.0, 0, now)

    def try_accept(self, now: float) -> bool:
        """Take a token if one is there at `now` (monotonic seconds)."""
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self._last) * self.qps)
        self._last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
