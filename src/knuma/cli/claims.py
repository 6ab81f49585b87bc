"""`knuma claims`: schedule device claims offline, as the k8srm prototype's `schedule` command did, for the
prototype's objects and for `resource.k8s.io/v1` objects (`schedule`), or allocate claims on one node (`allocate`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from knuma.cli import completion
from knuma.cli.errors import fail
from knuma.cli.output import output_format

if TYPE_CHECKING:
    from knuma.cli.output import TextLayout

# The allocator (CEL engine) is imported inside the commands: every `knuma` command imports this module at start-up.

claims_app = typer.Typer(
    name="claims",
    help="Device claims (DRA resource.k8s.io/v1 and the k8srm prototype): schedule and allocate offline.",
    no_args_is_help=True,
)

DEFAULT_BUDGET = 20_000
OUTPUTS = ("table", "json", "yaml")
ALLOCATE_OUTPUTS = ("json", "yaml")


def register(app: typer.Typer) -> None:
    claims_app.command("schedule")(schedule)
    claims_app.command("allocate")(allocate)
    app.add_typer(claims_app)


def _load(files: list[Path]) -> Any:
    from knuma.devices.scenario import read_scenario
    from knuma.manifests import load_objects

    return read_scenario(load_objects(files))


def _input_errors() -> tuple[type[Exception], ...]:
    from knuma.errors import InvalidInput
    from knuma.manifests import ManifestError

    return (InvalidInput, ManifestError, ValueError)


def schedule(
    files: list[Path] = typer.Option(
        ..., "-f", "--filename", metavar="FILE", help="YAML stream(s) of objects; repeatable."
    ),
    output: str = typer.Option(
        "table", "-o", "--output", help="table, json or yaml.", autocompletion=completion.output_formats(*OUTPUTS)
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Per-claim pool-set results / per-stage counts."),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", min=1, help="Search budget per node (leaves)."),
) -> None:
    """Choose a node for the claims in FILE: the k8srm prototype's DeviceClaims and DevicePools, or
    resource.k8s.io/v1 ResourceClaims (or a Pod with its claims) with ResourceSlices, DeviceClasses, Nodes and
    NodeResourceTopology objects."""
    output_format(output, OUTPUTS)
    try:
        from knuma.devices.explain import schedule_document

        scenario = _load(files)
        doc = schedule_document(scenario, budget)
    except _input_errors() as err:
        fail(str(err))
    for warning in doc.pop("warnings", []):
        typer.echo(f"warning: {warning}", err=True)
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
    elif output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)
    else:
        from knuma.cli.output import TextLayout, table_console

        typer.echo(_table(doc, verbose, TextLayout.for_console(table_console())), nl=False)


def _table(doc: dict[str, Any], verbose: bool, layout: TextLayout) -> str:
    """The prototype's sections; the node results' long lines (the reasons) wrap to the terminal, indented under
    their node, as `knuma check`'s problems do."""
    import yaml

    prototype = "pod" not in doc
    lines = ["ALLOCATIONS", "-----------"]
    allocations = doc["allocations"]
    lines.append("null" if allocations is None else yaml.safe_dump(allocations, sort_keys=True).rstrip())
    if not prototype and doc["selected"]:
        lines.append(f"selected node: {doc['selected']}")
    lines += ["", "NODE RESULTS", "------------"]
    if verbose and prototype:
        verbose_results = [node["verbose"] for node in doc["nodes"].values()]
        lines.append(yaml.safe_dump(verbose_results, sort_keys=True).rstrip())
    else:
        results: list[str] = []
        for node in doc["nodes"].values():
            results.append(node["summary"])
            if not prototype and node["reason"]:
                exhausted = " (search budget exhausted)" if node["exhausted"] else ""
                results.append(f"    {node['stage']}{exhausted}: {node['reason']}")
            if verbose and not prototype:
                for request, counts in node["stages"].items():
                    stages = ", ".join(f"{stage} {count}" for stage, count in counts.items())
                    results.append(f"    {request}: {stages}")
        lines += layout.wrap(results)
    return "\n".join(lines) + "\n"


def allocate(
    node: str = typer.Option(..., "--node", metavar="NAME", help="The node to allocate on."),
    files: list[Path] = typer.Option(
        ..., "-f", "--filename", metavar="FILE", help="YAML stream(s) of resource.k8s.io/v1 objects; repeatable."
    ),
    claim: list[str] = typer.Option(
        [], "--claim", metavar="[NAMESPACE/]NAME", help="Claim to allocate, NAME or NAMESPACE/NAME; repeatable."
    ),
    output: str = typer.Option(
        "json", "-o", "--output", help="json or yaml.", autocompletion=completion.output_formats(*ALLOCATE_OUTPUTS)
    ),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", min=1, help="Search budget (leaves)."),
) -> None:
    """Allocate claims on one node and print the v1 AllocationResult of each (exit 0 whether or not they fit)."""
    output_format(output, ALLOCATE_OUTPUTS)
    try:
        from knuma.devices.explain import allocate_document
        from knuma.devices.scenario import DRAScenario

        scenario = _load(files)
        if not isinstance(scenario, DRAScenario):
            fail(
                "knuma claims allocate reads resource.k8s.io/v1 objects; use `knuma claims schedule` for the "
                "prototype's DeviceClaims and DevicePools"
            )
        doc = allocate_document(scenario, node, claim, budget)
    except _input_errors() as err:
        fail(str(err))
    if output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)
    else:
        typer.echo(json.dumps(doc, indent=2))
