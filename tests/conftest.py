"""Test-suite-wide settings."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

if TYPE_CHECKING:
    from knuma.deploy.cluster import Session

# `make test` (CI's command) runs the property tests with a fixed seed (HYPOTHESIS_PROFILE=ci, also what CI=1
# selects), so that a submission is judged on the examples its author ran; `pytest` run directly keeps random
# exploration, which is how new counterexamples are found (HYPOTHESIS_PROFILE=dev make test explores too).
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

# Tables size themselves from COLUMNS (`knuma.cli.output`); the suite runs as CI runs it, piped and without it. The
# parallel workers of `make test` (pytest-xdist) inherit COLUMNS=80 and LINES=24 from execnet, which would narrow
# every table a test reads; tests that want a width set it themselves.
for _variable in ("COLUMNS", "LINES"):
    os.environ.pop(_variable, None)


@pytest.fixture(autouse=True)
def _no_logging_to_closed_streams() -> Iterator[None]:
    """A command a test runs in-process (typer's runner) configures logging (`basicConfig`, the exporter's JSON
    handler) on the stream the runner substitutes for stderr, which it closes when the command returns. Left in
    place, such a handler fails every later record (`--- Logging error ---` in the suite's output, from an API server
    thread of another test): it goes when its test ends."""
    yield
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        if not isinstance(logger, logging.Logger):
            continue  # a placeholder for a dotted name's parent: no handlers
        for handler in list(logger.handlers):
            if getattr(getattr(handler, "stream", None), "closed", False):
                logger.removeHandler(handler)


@pytest.fixture
def chromium() -> str:
    """The Chromium the browser tests drive. Missing, the test fails and says how to install it (`make test` does when
    it can); only an explicit KNUMA_SKIP_BROWSER=1 turns that into a skip."""
    from knuma.testing.browser import BrowserMissing, find_chromium

    try:
        return find_chromium()
    except BrowserMissing as err:
        if os.environ.get("KNUMA_SKIP_BROWSER") == "1":
            pytest.skip(f"KNUMA_SKIP_BROWSER=1: browser test skipped on request ({err})")
        pytest.fail(f"{err}; or set KNUMA_SKIP_BROWSER=1 to skip the browser tests", pytrace=False)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[RunningApiServer]:
    """A fresh authenticated (HTTPS + bearer token) `knuma apiserver` in a background thread, stopped after the
    test; watch bookmarks every 0.3 s so informers resume quickly. A folder or module that needs another server
    (shared per session, a short watch window) defines its own `api`, which overrides this one."""
    with apiserver_in_thread(tmp_path / "api", bookmark_interval=0.3) as running:
        yield running


@pytest.fixture
def session(api: RunningApiServer) -> Iterator[Session]:
    """A deployer session (lightkube client + REST) on `api`, closed after the test."""
    from knuma.deploy.cluster import connect

    with connect(str(api.kubeconfig)) as s:
        yield s
