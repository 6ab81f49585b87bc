"""Helpers for test suites of knuma and of projects built on it (fixtures that start real servers)."""
