"""Running the shipped suite: pytest on `knuma/e2e/suite` with the cluster's flags, isolated from any pytest
configuration of the current directory (a temporary ini file, no cache)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from knuma.errors import InvalidInput

__all__ = ["SUITE", "run_suite"]

SUITE = Path(__file__).resolve().parent / "suite"
_INI = "[pytest]\naddopts = -ra\nconsole_output_style = classic\nasyncio_default_fixture_loop_scope = function\n"


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
