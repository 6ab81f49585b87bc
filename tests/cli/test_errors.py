"""`knuma.cli.errors`: a `KnumaError` escaping any command is `error: ...` on stderr and an exit status by branch."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from knuma.cli import errors
from knuma.cli.main import app
from knuma.errors import InvalidInput, OperationFailed

runner = CliRunner()


def _app() -> typer.Typer:
    demo = typer.Typer()

    @demo.command("bad-input")
    @errors.reporting_errors
    def bad_input(name: str = typer.Option("x", "--name")) -> None:
        raise InvalidInput(f"invalid --name {name!r}: use a DNS label")

    @demo.command("cluster-down")
    @errors.reporting_errors
    def cluster_down() -> None:
        raise OperationFailed("the API server refused: 503")

    return demo


def test_invalid_input_exits_2_and_a_failure_exits_1_without_a_traceback() -> None:
    demo = _app()
    result = runner.invoke(demo, ["bad-input", "--name", "A B"])
    assert (result.exit_code, result.stderr) == (2, "error: invalid --name 'A B': use a DNS label\n")
    result = runner.invoke(demo, ["cluster-down"])
    assert (result.exit_code, result.stderr) == (1, "error: the API server refused: 503\n")
    assert "Traceback" not in result.output


def test_the_real_commands_go_through_the_handler(tmp_path: Path) -> None:
    """`knuma schedule` has no try/except of its own: a bad weight is reported by the handler."""
    pod = tmp_path / "pod.yaml"
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n")
    result = runner.invoke(app, ["schedule", "--pod", str(pod), "--nodes", str(pod), "--weight", "cpu"])
    assert result.exit_code == 2
    assert "error: invalid --weight 'cpu'; expected NAME=INTEGER" in result.stderr


def test_every_port_flag_refuses_a_port_out_of_range_before_starting() -> None:
    """A port above 65535 is a usage error (exit 2) naming the flag, not a traceback from bind()."""
    for args in (
        ["apiserver", "--port", "99999"],
        ["up", "--port", "70000"],
        ["scheduler", "--metrics-port", "70000"],
        ["exporter", "--node-name", "n", "--metrics-port", "70000"],
        ["operator", "--metrics-port", "70000"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert args[-2] in result.output and "Traceback" not in result.output, args


UTF16 = "UTF-16 text (it starts with a UTF-16 byte-order mark), not UTF-8; save it as UTF-8"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["scheduler", "--config", "{f}", "--check-config"],
            "invalid scheduler configuration: {f}: cannot read: {why}",
        ),
        (["exporter", "--node-name", "n", "--config", "{f}", "--dump-config", ".andexit"], "{f}: cannot read: {why}"),
        (
            [
                "exporter",
                "--node-name",
                "n",
                "--once",
                "--dry-run",
                "--no-podresources",
                "--kubelet-config-file",
                "{f}",
            ],
            "{f}: cannot read: {why}",
        ),
        (["exporter", "--node-name", "n", "{root}", "--dump-config", ".andexit"], "{conf}: cannot read: {why}"),
        (["apiserver", "--token-auth-file", "{f}"], "cannot read --token-auth-file {f}: {why}"),
        (["apiserver", "--load", "{f}"], "--load {f}: cannot read: {why}"),
        (["check", "--kubeconfig", "{f}"], "cannot read kubeconfig {f}: {why}"),
        (["simulate", "--cluster", "{f}"], "cannot read {f}: {why}"),
        (["up", "--cluster", "{f}"], "cannot read {f}: {why}"),
        (["render", "updater", "--rte-config-file", "{f}"], "cannot read --rte-config-file {f}: {why}"),
        (
            ["render", "scheduler", "--sched-cache-params-config-file", "{f}"],
            "--sched-cache-params-config-file {f}: cannot read: {why}",
        ),
        (["schedule", "--pod", "{f}", "--nodes", "{f}"], "{f}: cannot read: {why}"),
        (["claims", "schedule", "-f", "{f}"], "{f}: cannot read: {why}"),
    ],
)
def test_every_user_file_that_is_not_utf8_is_an_error_line_naming_it(
    tmp_path: Path, args: list[str], message: str
) -> None:
    """Configurations, kubelet configurations, token files, kubeconfigs, cluster specs and manifests are read as UTF-8
    by one function (`knuma.manifests.read_user_file`): other bytes are an error line naming the file, exit 2."""
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    conf = tmp_path / "rte" / "daemon" / "config.yaml"  # an exporter CONFIGROOT's daemon config
    conf.parent.mkdir(parents=True)
    conf.write_bytes(b"\xff\xfe\x00garbage")
    names = {"f": str(bad), "root": str(tmp_path / "rte"), "conf": str(conf)}
    result = runner.invoke(app, [arg.format(**names) for arg in args])
    expected = message.format(**names, why=UTF16)
    assert (result.exit_code, result.stderr) == (2, f"error: {expected}\n"), result.exception


def test_a_kubeconfig_in_kubeconfig_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"clusters: []\nusers: [{name: caf\xe9}]\n")
    result = runner.invoke(app, ["check"], env={"KUBECONFIG": f"{bad}:{tmp_path / 'absent.yaml'}"})
    why = "not UTF-8 text (byte 0xe9 at offset 31); save it as UTF-8"
    assert (result.exit_code, result.stderr) == (2, f"error: cannot read kubeconfig {bad} (from $KUBECONFIG): {why}\n")
