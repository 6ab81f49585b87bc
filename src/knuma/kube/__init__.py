"""The only layer that talks to an API server: client set-up, informers, server-side apply, waits.

Daemons and tools (scheduler, exporter, deployer, simulated nodes) build on these modules and keep their decisions in
pure functions elsewhere.
"""
