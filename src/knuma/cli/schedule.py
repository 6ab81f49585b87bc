"""`knuma schedule`: explain where one pod would go among a set of nodes, and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from knuma.cli import completion
from knuma.cli.errors import fail
from knuma.errors import InvalidInput

# The scheduler (numpy), the manifest loader and rich are imported inside the command: every `knuma` command,
# including the exporter daemon on each node, imports this module at start-up.


OUTPUTS = ("table", "json", "yaml")


def register(app: typer.Typer) -> None:
    app.command("schedule")(schedule)


def schedule(
    pod: Path = typer.Option(
        ..., "--pod", metavar="FILE", help="Pod manifest (or a Deployment/Job whose pod template to use)."
    ),
    nodes: list[Path] = typer.Option(
        ...,
        "--nodes",
        metavar="FILE",
        help="YAML with NodeResourceTopology and optional Node objects; repeatable.",
    ),
    scoring_strategy: str = typer.Option(
        "KnumaBinPacking",
        "--scoring-strategy",
        metavar="TYPE",
        help="NodeResourceTopologyMatch scoringStrategy.type: knuma's KnumaBinPacking (default), or upstream's "
        "LeastAllocated, MostAllocated, BalancedAllocation, LeastNUMANodes.",
    ),
    weight: list[str] = typer.Option(
        [],
        "--weight",
        metavar="NAME=INT",
        help="Resource weight for scoring, NAME=INT (default cpu=1, memory=1); repeatable.",
    ),
    output: str = typer.Option(
        "table", "-o", "--output", help="table, json or yaml.", autocompletion=completion.output_formats(*OUTPUTS)
    ),
    explain_hints: bool = typer.Option(
        False,
        "--explain-hints",
        help="Also show, per node, each hint provider's hints and the Topology Manager's merge, as the kubelet "
        "logs them at high verbosity (`hints` in json/yaml).",
    ),
) -> None:
    """Explain one pod against a set of nodes: per-node, per-plugin filter results and scores, and the
    kubelet's predicted NUMA placement of each container."""
    import yaml

    from knuma.api.pod import Pod
    from knuma.cli.output import output_format
    from knuma.manifests import ManifestError, load_documents, load_objects, pod_manifest
    from knuma.scheduler.explain import explain
    from knuma.scheduler.framework.profiles import default_profile
    from knuma.scheduler.framework.snapshot import node_infos_from_objects
    from knuma.scheduler.plugins.strategies import ScoringStrategy, StrategyType

    output_format(output, OUTPUTS)
    strategy = ScoringStrategy(StrategyType.parse(scoring_strategy), _weights(weight) or None)
    pod_docs = load_documents(pod)
    if len(pod_docs) != 1:
        raise ManifestError(f"{pod}: expected exactly one pod, found {len(pod_docs)} documents")
    _strict_fields(pod_docs[0], str(pod))
    manifest = pod_manifest(pod_docs[0], str(pod))
    try:
        the_pod = Pod.from_manifest(manifest)
    except InvalidInput as err:
        raise ManifestError(f"{pod}: {err}") from None
    infos = node_infos_from_objects(load_objects(nodes))
    if not infos:
        fail("no nodes given: --nodes files must hold NodeResourceTopology or Node objects")
    doc = explain(default_profile(strategy), the_pod, infos, hints=explain_hints)
    if output == "json":
        typer.echo(json.dumps(doc, indent=2))
    elif output == "yaml":
        typer.echo(yaml.safe_dump(doc, sort_keys=False), nl=False)
    else:
        _print_table(doc)
        if explain_hints:
            _print_hints(doc)


def _weights(pairs: list[str]) -> dict[str, int]:
    weights: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value.lstrip("-").isdigit():
            raise InvalidInput(f"invalid --weight {pair!r}; expected NAME=INTEGER, for example cpu=2")
        weights[name] = int(value)
    return weights


def _print_table(doc: dict[str, Any]) -> None:
    from rich.table import Table

    from knuma.cli.output import table_console

    console = table_console()
    separator = "/" if console.width >= 120 else " /"  # narrow: let the policy wrap before its scope
    selected = doc["selected"]
    title = f"pod {doc['pod']} ({doc['qosClass']}): " + (
        f"selected node [bold]{selected}[/bold]" if selected else f"[bold red]no node fits[/bold red]: {doc['message']}"
    )
    plugin_names: list[str] = []
    for node in doc["nodes"]:
        plugin_names += [p for p in node["plugins"] if p not in plugin_names]
    table = Table(title=title, title_justify="left")
    # narrow terminals: cells wrap (folding long words) rather than end in an ellipsis, so no verdict is hidden
    table.add_column("NODE", overflow="fold")
    table.add_column("POLICY", overflow="fold")
    for name in plugin_names:
        table.add_column(name, overflow="fold")
    table.add_column("SCORE", justify="right")
    table.add_column("NUMA (kubelet prediction)", overflow="fold")
    for node in doc["nodes"]:
        tm = node["topologyManager"]
        cells = [
            node["name"] + (" *" if node["name"] == selected else ""),
            f"{tm['policy']}{separator}{tm['scope']}" if tm else "no NRT",
        ]
        for name in plugin_names:
            cells.append(_plugin_cell(node["plugins"].get(name)))
        cells.append("-" if node["score"] is None else str(node["score"]))
        cells.append(", ".join(f"{c}: {ids}" for c, ids in node["numa"].items()) or _rejection(node))
        table.add_row(*cells)
    console.print(table)


def _plugin_cell(result: dict[str, Any] | None) -> str:
    if result is None:
        return ""
    parts = []
    verdict = result.get("filter")
    if verdict is not None:
        parts.append("passed" if verdict["status"] == "Success" else verdict["reason"])
    if result.get("score") is not None:
        parts.append(f"score {result['score']}")
    return ", ".join(parts)


def _rejection(node: dict[str, Any]) -> str:
    kubelet = node.get("kubelet")
    if kubelet and not kubelet["admitted"]:
        return str(kubelet["reason"])
    return ""


def _print_hints(doc: dict[str, Any]) -> None:
    """Per node with NUMA data: the kubelet's log lines for this pod, then the verdict."""
    for node in doc["nodes"]:
        trace = node.get("hints")
        if trace is None:
            continue
        tm = node["topologyManager"]
        typer.echo(f"\nnode {node['name']} ({tm['policy']}/{tm['scope']}): Topology Manager hints")
        for line in trace["log"]:
            typer.echo(f"  {line}")
        result = trace["result"]
        verdict = "admitted" if result["admitted"] else f"rejected: {result['reason']}: {result['message']}"
        typer.echo(f"  => {verdict}")


def _strict_fields(doc: Any, source: str) -> None:
    """Refuse a manifest kube-apiserver would refuse under kubectl's default `--validate=strict`: an unknown field
    (a misspelt `resources` would otherwise make the pod BestEffort without a word), checked against the kind's
    fields as `knuma apiserver` checks them (`fieldschema`)."""
    from knuma.local.apiserver import fieldschema
    from knuma.manifests import ManifestError

    if not isinstance(doc, dict):
        return
    group, _, version = str(doc.get("apiVersion") or "v1").rpartition("/")
    kind = str(doc.get("kind") or "Pod")
    if not fieldschema.has_schema(group, version, kind):
        return
    decoded = fieldschema.decode(group, version, kind, doc)
    problems = [f'unknown field "{f}"' for f in decoded.unknown]  # wrong types: the pod parser says it its way
    if problems:
        raise ManifestError(
            f"{source}: {'; '.join(problems)} in the {kind} (kube-apiserver refuses it under kubectl's default "
            "--validate=strict): fix the field"
        )
