"""`knuma scheduler` through the console script: configuration checks and start-up errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
