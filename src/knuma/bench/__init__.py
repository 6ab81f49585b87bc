"""Benchmarks: measured by `make bench`, written to docs/benchmarks.md. Never timed in unit tests."""
