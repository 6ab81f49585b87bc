"""Running the shipped suite: pytest on `knuma/e2e/suite` with the cluster's flags, isolated from any pytest
configuration of the current directory (a temporary ini file, no cache)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from knuma.errors import InvalidInput, OperationFailed

__all__ = ["STACK_UNUSABLE", "SUITE", "ClusterUnreachable", "run_suite"]

SUITE = Path(__file__).resolve().parent / "suite"
STACK_UNUSABLE = 3
"""The exit status of a stack the suite cannot test (its `pytest.exit(..., returncode=3)`), and of a cluster that
does not answer at all."""


class ClusterUnreachable(OperationFailed):
    """The API server did not answer: the suite is not started (every test would fail the same way); `knuma e2e`
    exits 3, as for a stack that is not usable."""


_INI = (
    "[pytest]\naddopts = -ra\nconsole_output_style = classic\nasyncio_default_fixture_loop_scope = function\n"
    # pytest marks every installed plugin's package for assertion rewriting; knuma, running pytest in-process, has
    # imported some of them already (anyio), which pytest warned about at every run. The suite's modules are rewritten.
    "filterwarnings =\n    ignore::pytest.PytestAssertRewriteWarning\n"
)


def run_suite(
    kubeconfig: str | None,
    context: str | None = None,
    *,
    keyword: str | None = None,
    scheduler_name: str = "topology-aware-scheduler",
    deploy: str = "never",
    verbose: bool = False,
    extra: list[str] | None = None,
) -> int:
    """pytest's exit status: 0 all passed, 1 failures, 2 interrupted, 3 the stack is not usable, 5 nothing selected."""
    try:
        import pytest
    except ImportError:
        raise InvalidInput("knuma e2e runs on pytest, which is not installed: pip install pytest") from None
    if deploy not in ("never", "missing"):
        raise InvalidInput(f"--deploy must be never or missing, got {deploy!r}")
    _answers(kubeconfig, context)
    with tempfile.TemporaryDirectory(prefix="knuma-e2e-") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text(_INI)
        args = [str(SUITE), "-c", str(ini), "--rootdir", str(SUITE), "-p", "no:cacheprovider"]
        args += ["--scheduler-name", scheduler_name, "--deploy", deploy, "-v" if verbose else "-q"]
        if kubeconfig:
            args += ["--kubeconfig", kubeconfig]
        if context:
            args += ["--context", context]
        if keyword:
            args += ["-k", keyword]
        return int(pytest.main([*args, *(extra or [])]))


def _answers(kubeconfig: str | None, context: str | None) -> None:
    """Raise `ClusterUnreachable`, naming the server and why, when the API server does not answer `GET /version`."""
    from knuma.kube import rest
    from knuma.kube.client import http_client
    from knuma.kube.errors import CHECK_CONNECTION, KubeApiError

    with http_client(kubeconfig, context, timeout=30) as http:
        try:
            rest.request_sync(http, "GET", "/version")
        except KubeApiError as err:
            if err.status is None:
                raise ClusterUnreachable(f"{err}; {CHECK_CONNECTION}") from None
