"""`knuma.cli.errors`: a `KnumaError` escaping any command is `error: ...` on stderr and an exit status by branch."""

from __future__ import annotations

from pathlib import Path

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
