"""A token bucket, as client-go's `flowcontrol.NewTokenBucketRateLimiter` (`golang.org/x/time/rate` underneath).

The bucket starts full (`burst` tokens) and refills at `qps` tokens per second up to `burst`; an action that finds a
token takes it. A `qps` of 0 or less never accepts (`flowcontrol.NewFakeNeverRateLimiter`, what the node lifecycle
controller swaps in to stop evictions). Time is passed in, so the callers' clocks (and tests) decide it.
"""

from __future__ import annotations

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst) if qps > 0 else 0.0
        self._last = now

    def try_accept(self, now: float) -> bool:
        """Take a token if one is there at `now` (monotonic seconds)."""
        if self.qps <= 0:
            return False
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self._last) * self.qps)
        self._last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
