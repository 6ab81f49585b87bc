"""The simulated-nodes benchmark on a few nodes: each size runs in its own process, so its RSS is the node process's
own, whatever the caller allocated before."""

from __future__ import annotations

import resource

from knuma.bench import nodes as bench


def test_a_small_fleet_registers_renews_and_admits_in_a_fresh_process() -> None:
    ballast = bytearray(300 * 1024 * 1024)  # the caller's own peak, which must not show in the result
    ballast[::4096] = b"x" * len(ballast[::4096])
    caller_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    [result] = bench.run((5,), window=1.0, pods=10)
    del ballast
    assert result.nodes == 5 and result.admitted == 10
    assert result.renewals_due == 0 or result.renewals > 0
    assert 0 < result.rss_mib < caller_peak - 200
