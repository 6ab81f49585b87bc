"""`knuma scheduler` through the console script: configuration checks and start-up errors."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from knuma.cli.main import app

KNUMA = [str(Path(sys.executable).parent / "knuma")]
CONFIGS = Path(__file__).parents[1] / "scheduler" / "configs"


def knuma(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KNUMA, "scheduler", *args], capture_output=True, text=True, timeout=60, check=False)


def test_check_config_accepts_an_upstream_scheduler_plugins_file() -> None:
    done = knuma("--config", str(CONFIGS / "scheduler-plugins-cache.yaml"), "--check-config")
    assert done.returncode == 0, done.stderr
    assert "profile topo-aware-scheduler (topology-aware)" in done.stdout
    assert "LeastNUMANodes" in done.stdout


def test_check_config_rejects_an_invalid_value_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        "- schedulerName: x\n  pluginConfig:\n  - name: NodeResourceTopologyMatch\n    args:\n"
        "      scoringStrategy: {type: Foo}\n"
    )
    done = knuma("--config", str(bad), "--check-config")
    assert done.returncode == 2
    assert "profiles[0].pluginConfig[0].args.scoringStrategy.type" in done.stderr
    assert "Foo" in done.stderr


def test_check_config_also_checks_the_flags_a_start_would_refuse() -> None:
    config = str(CONFIGS / "scheduler-plugins-cache.yaml")
    done = knuma("--config", config, "--tls-cipher-suites", "TLS_NOT_A_SUITE", "--check-config")
    assert done.returncode == 2 and "TLS_NOT_A_SUITE" in done.stderr, done.stdout + done.stderr
    done = knuma("--config", config, "--tls-cert-file", "cert.pem", "--check-config")
    assert done.returncode == 2 and "--tls-private-key-file" in done.stderr, done.stdout + done.stderr


def test_check_config_refuses_a_cert_dir_that_is_a_file(tmp_path: Path) -> None:
    """The secure port's self-signed pair goes into --cert-dir: a regular file there (or above it) fails the check as
    it fails the start; with --secure-port 0 the flag is unused."""
    regular = tmp_path / "certs"
    regular.write_text("mine\n")
    hint = "give a directory for the secure port's self-signed certificate (it is created when missing), or pass "
    hint += "--tls-cert-file and --tls-private-key-file"
    done = knuma("--cert-dir", str(regular), "--check-config")
    assert (done.returncode, done.stderr) == (2, f"error: --cert-dir {regular} is not a directory: {hint}\n")
    done = knuma("--cert-dir", str(regular / "sub"), "--check-config")
    expected = f"error: --cert-dir {regular / 'sub'} is not a directory ({regular} is a file): {hint}\n"
    assert (done.returncode, done.stderr) == (2, expected)
    assert knuma("--cert-dir", str(regular), "--secure-port", "0", "--check-config").returncode == 0
    assert regular.read_text() == "mine\n"


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The command configures the root logger onto the runner's stderr, closed after the run: put it back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
def test_check_config_refuses_what_the_start_would_refuse_or_retry_for_ever(tmp_path: Path) -> None:
    """A Lease name the API server refuses made leader election retry its 422 for ever; a bind address that is not an
    IP, files that are not a certificate, a key or a CA bundle failed only at start. Each is an error line now, and
    nothing is written (no self-signed pair)."""
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = [
        (["--lease-name", "BAD!"], "error: invalid --lease-name 'BAD!': a lowercase RFC 1123 subdomain must consist"),
        (["--lease-namespace", "Kube_System"], "error: invalid --lease-namespace 'Kube_System': a lowercase RFC 1123"),
        (["--bind-address", "999.9.9.9"], "error: invalid --bind-address '999.9.9.9': not an IP address"),
        (
            ["--tls-cert-file", str(garbage), "--tls-private-key-file", str(garbage)],
            f"error: cannot load the secure port certificate {garbage} with key {garbage}",
        ),
        (["--client-ca-file", str(garbage)], f"error: cannot load the secure port client CA file {garbage}"),
    ]
    config = tmp_path / "lease.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: true, resourceName: My_Lease}\n"
    )
    cases.append((["--config", str(config)], "error: invalid scheduler configuration: "))
    for flags, expected in cases:  # in-process: five interpreters started for this took 26 s on a loaded machine
        done = CliRunner().invoke(app, ["scheduler", *flags, "--cert-dir", str(tmp_path / "certs"), "--check-config"])
        assert done.exit_code == 2, (flags, done.output)
        assert done.stderr.startswith(expected), (flags, done.stderr)
    assert not (tmp_path / "certs").exists()
    assert "leaderElection.resourceName" in done.stderr and "My_Lease" in done.stderr


def test_unknown_key_fails_fast_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofilez: []\n")
    done = knuma("--config", str(bad), "--kubeconfig", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "profilez" in done.stderr


def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    done = knuma("--kubeconfig", str(tmp_path / "missing.yaml"), "--metrics-port", "0")
    assert done.returncode == 2
    assert "missing.yaml does not exist" in done.stderr
