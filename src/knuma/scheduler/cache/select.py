"""Which NRT cache a NodeResourceTopologyMatch configuration gets (scheduler-plugins `pluginhelpers.go`,
`initNodeTopologyInformer`), plus knuma's own as the default.

Upstream's order: `discardReservedNodes: true` → `discardreserved`; else `cacheResyncPeriodSeconds` <= 0 →
`passthrough`; else `overreserve`, resynced every that many seconds, with the `cache.*` settings. knuma differs in one
place: when the arguments name neither (no `discardReservedNodes: true` and no `cacheResyncPeriodSeconds` at all),
the cache is knuma's (`knuma.scheduler.cache.knuma`). Upstream would use passthrough there; `cacheResyncPeriodSeconds:
0` asks for passthrough explicitly.
"""

from __future__ import annotations

from collections.abc import Collection

from knuma.scheduler.cache.discardreserved import DiscardReserved
from knuma.scheduler.cache.interface import NRTCache, OnChange
from knuma.scheduler.cache.knuma import KnumaCache
from knuma.scheduler.cache.overreserve import OverReserve
from knuma.scheduler.cache.passthrough import Passthrough
from knuma.scheduler.cache.resyncdebug import ResyncDump
from knuma.scheduler.plugins.numa_args import NumaArgs

__all__ = ["MODES", "make_nrt_cache", "nrt_cache"]

MODES = ("knuma", "passthrough", "overreserve", "discardreserved")


def nrt_cache(
    args: NumaArgs,
    on_change: OnChange = lambda _: None,
    *,
    profile_names: Collection[str] = (),
    wait_for_sync: bool = False,
    resync_debug: ResyncDump | None = None,
) -> NRTCache:
    """The cache these arguments select. `profile_names`: the scheduler names of this daemon's profiles (pods bound
    under any other name are foreign to the overreserve cache); `wait_for_sync`: see `make_nrt_cache`;
    `resync_debug`: where the overreserve cache records its resync checks (`PFP_STATUS_DUMP`)."""
    return make_nrt_cache(
        args.cache_mode,
        on_change,
        wait_for_sync=wait_for_sync,
        resync_period=float(args.cache_resync_period_seconds or 0),
        profile_names=profile_names,
        foreign_pods_detect=args.foreign_pods_detect,
        resync_method=args.resync_method,
        informer_mode=args.informer_mode,
        resync_scope=args.resync_scope,
        resync_debug=resync_debug,
    )


def make_nrt_cache(
    mode: str,
    on_change: OnChange = lambda _: None,
    *,
    resync_period: float = 5.0,
    profile_names: Collection[str] = (),
    foreign_pods_detect: str = "All",
    resync_method: str = "Autodetect",
    informer_mode: str = "Dedicated",
    resync_scope: str = "All",
    wait_for_sync: bool = False,
    resync_debug: ResyncDump | None = None,
) -> NRTCache:
    """A cache by mode name (one of `MODES`). `wait_for_sync`: knuma's cache seeds its shadows only when the daemon
    calls `informers_synced` (a daemon starting on a running cluster); otherwise at each node's first NRT."""
    if mode == "knuma":
        return KnumaCache(on_change, wait_for_sync=wait_for_sync)
    if mode == "passthrough":
        return Passthrough(on_change)
    if mode == "discardreserved":
        return DiscardReserved(on_change)
    if mode == "overreserve":
        if resync_period <= 0:
            raise ValueError("the overreserve cache needs a resync period > 0 (cacheResyncPeriodSeconds)")
        return OverReserve(
            resync_period,
            on_change,
            profile_names=profile_names,
            foreign_pods_detect=foreign_pods_detect,
            resync_method=resync_method,
            informer_mode=informer_mode,
            resync_scope=resync_scope,
            debug=resync_debug,
        )
    raise ValueError(f"unknown NRT cache mode {mode!r}; expected one of {', '.join(MODES)}")
