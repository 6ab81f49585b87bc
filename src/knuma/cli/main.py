"""Entry point of the `knuma` (and `kubectl numa`) command.

Each command lives in its own module and registers itself on `app`; this module only assembles them.
"""

from __future__ import annotations

import sys

import typer

from knuma import __version__
from knuma.cli import apiserver, bench, deploy, exporter, operator, schedule, scheduler, simulate, up

app = typer.Typer(
    name="knuma",
    help="NUMA-aware scheduling for Kubernetes: explain, schedule, export, deploy and simulate.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)

for command in (schedule, scheduler, apiserver, exporter, simulate, bench, deploy, up, operator):
    command.register(app)


@app.command("version")
def version() -> None:
    """Print the knuma version."""
    typer.echo(__version__)


def main() -> None:
    """Run the CLI; `kubectl numa ...` lands here too."""
    prog = "kubectl numa" if sys.argv and sys.argv[0].endswith("kubectl-numa") else "knuma"
    app(prog_name=prog)
