"""Entry point of the `knuma` (and `kubectl numa`) command.

Each command lives in its own module and registers itself on `app`; this module only assembles them.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import typer

from knuma import __version__
from knuma.cli import (
    apiserver,
    bench,
    check,
    claims,
    deploy,
    e2e,
    errors,
    exporter,
    logopts,
    operator,
    schedule,
    scheduler,
    simulate,
    up,
)


def _wrap_help_at_spaces_only() -> None:
    """Help text wraps at spaces only. click's wrapper also breaks after the hyphens inside a word, which split
    option names and upstream names a user copies (`scheduler-plugins' kube-` / `scheduler`). The wrapper help uses
    is typer's private copy of click's (`typer._click._textwrap.TextWrapper`, looked up each time text is wrapped),
    so it is replaced here by one that keeps hyphenated words whole; `tests/cli/test_entry_point.py` fails should
    a typer upgrade move it."""
    from typer._click import _textwrap

    base = _textwrap.TextWrapper

    class SpacesOnly(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("break_on_hyphens", False)
            super().__init__(*args, **kwargs)

    _textwrap.TextWrapper = SpacesOnly  # type: ignore[misc]


_wrap_help_at_spaces_only()

app = typer.Typer(
    name="knuma",
    help="NUMA-aware scheduling for Kubernetes: explain, schedule, export, deploy and simulate.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

for command in (schedule, scheduler, apiserver, exporter, simulate, bench, deploy, check, e2e, up, operator, claims):
    command.register(app)

VERSION_HELP = "Print the knuma version and exit."


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


def _version_option() -> Any:
    return typer.Option(
        False, "--version", callback=_print_version, is_eager=True, expose_value=False, help=VERSION_HELP
    )


@app.callback()
def root(_version: bool = _version_option()) -> None:
    """NUMA-aware scheduling for Kubernetes: explain, schedule, export, deploy and simulate."""


def _with_version(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` with a `--version` option too, so `knuma up --version` answers as `knuma --version` does (users of
    kubectl and the deployer expect the flag wherever they are). The option is eager; `func` never sees it."""
    signature = inspect.signature(func)
    if "knuma_version" in signature.parameters:
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("knuma_version", None)
        return func(*args, **kwargs)

    extra = inspect.Parameter(
        "knuma_version", inspect.Parameter.KEYWORD_ONLY, default=_version_option(), annotation=bool
    )
    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**func.__annotations__, "knuma_version": "bool"}
    return wrapper


def _wrap_every_command(typer_app: typer.Typer, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace each command of `typer_app` and its sub-apps by `wrap(command)`."""
    for info in typer_app.registered_commands:
        if info.callback is not None:
            info.callback = wrap(info.callback)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _wrap_every_command(group.typer_instance, wrap)


SHORT_HELP = {
    "schedule": "Explain where one pod would go among given nodes, and why.",
    "scheduler": "Run the NUMA-aware scheduler against a cluster.",
    "apiserver": "Run a Kubernetes-compatible API server (the subset knuma uses).",
    "exporter": "Publish this node's per-NUMA resources (NodeResourceTopology).",
    "simulate": "Compare schedulers on a simulated cluster.",
    "bench": "Measure the scheduling core's throughput.",
    "render": "Print the stack's manifests without touching a cluster.",
    "deploy": "Apply the stack (or one component) to a cluster.",
    "remove": "Delete the stack (or one component) from a cluster.",
    "validate": "Check that the nodes' kubelets suit NUMA-aware scheduling.",
    "detect": "Print the cluster's platform and version.",
    "images": "List the container images of the stack.",
    "check": "Diagnose the NUMA-aware scheduling stack on a cluster.",
    "gather": "Collect what a bug report needs into a tarball.",
    "e2e": "Run the end-to-end suite against a cluster.",
    "up": "Run a local cluster of simulated NUMA nodes with the stack.",
    "operator": "Run the operator (NUMAResources custom resources).",
    "version": "Print the knuma version.",
    "claims": "Schedule and allocate device claims offline (DRA).",
    "claims schedule": "Choose a node for device claims, explained per node.",
    "claims allocate": "Allocate claims on one node (v1 AllocationResult).",
}
"""The one-line summaries in `knuma -h`'s command list, short enough for 80 columns (click would cut the first
sentence of the help with `...`); `knuma COMMAND -h` shows the whole help."""


def _short_help(typer_app: typer.Typer, prefix: str = "") -> None:
    for info in typer_app.registered_commands:
        name = prefix + (info.name or "")
        if name in SHORT_HELP and info.short_help is None:
            info.short_help = SHORT_HELP[name]
    for group in typer_app.registered_groups:
        if group.typer_instance is None:
            continue
        name = prefix + str(group.name or group.typer_instance.info.name or "")
        if name in SHORT_HELP:
            group.typer_instance.info.short_help = SHORT_HELP[name]
        _short_help(group.typer_instance, f"{name} ")


def _group_versions(typer_app: typer.Typer) -> None:
    """Give each command group (`knuma claims`) the `--version` flag too, with a callback that does nothing else."""
    for group in typer_app.registered_groups:
        sub_app = group.typer_instance
        if sub_app is None or sub_app.registered_callback is not None:
            continue

        def group_root(_version: bool = _version_option()) -> None:
            pass

        sub_app.callback()(group_root)
        _group_versions(sub_app)


def _reflow(text: str) -> str:
    """A docstring as help text: the lines of each paragraph joined, so the terminal wraps them (a hard line break
    mid-sentence would show as one in `knuma -h`); paragraphs and indented blocks stay as written."""
    paragraphs = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        if any(line.startswith((" ", "\t")) for line in lines):  # examples, lists: keep their layout
            paragraphs.append(block)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _reflow_help(typer_app: typer.Typer) -> None:
    for info in typer_app.registered_commands:
        text = info.help or (inspect.getdoc(info.callback) if info.callback is not None else None)
        if text:
            info.help = _reflow(text)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _reflow_help(group.typer_instance)


@app.command("version")
def version() -> None:
    """Print the knuma version."""
    typer.echo(__version__)


# after every command is registered: help text reflowed, errors become exit statuses in one place, and every command
# takes -v/--log-level and --version
_reflow_help(app)
_short_help(app)
_group_versions(app)
_wrap_every_command(app, logopts.with_log_options)
_wrap_every_command(app, errors.reporting_errors)
_wrap_every_command(app, _with_version)


def main() -> None:
    """Run the CLI; `kubectl numa ...` lands here too."""
    prog = "kubectl numa" if sys.argv and sys.argv[0].endswith("kubectl-numa") else "knuma"
    app(prog_name=prog)
