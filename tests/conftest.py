"""Test-suite-wide settings."""

from __future__ import annotations

import os

from hypothesis import settings

# CI runs the property tests with a fixed seed, so that a submission is judged on the examples its author ran;
# developers keep random exploration (HYPOTHESIS_PROFILE=ci reproduces CI locally).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
