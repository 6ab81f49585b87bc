"""`knuma e2e`: run the end-to-end suite against a cluster (thin: flags to `knuma.e2e.runner.run_suite`)."""

from __future__ import annotations

import typer

from knuma.cli import completion


def register(app: typer.Typer) -> None:
    app.command("e2e", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(e2e)


def e2e(
    ctx: typer.Context,
    kubeconfig: str | None = typer.Option(None, "--kubeconfig", help="kubeconfig of the cluster under test."),
    context: str | None = typer.Option(None, "--context", help="kubeconfig context."),
    keyword: str | None = typer.Option(None, "-k", help="Only the tests matching this pytest -k expression."),
    scheduler_name: str = typer.Option(
        "topology-aware-scheduler", "--scheduler-name", help="The schedulerName of the NUMA-aware profile."
    ),
    deploy: str = typer.Option(
        "never",
        "--deploy",
        help="never (use the deployed stack) or missing (deploy it if absent, remove it after).",
        autocompletion=completion.choices("never", "missing"),
    ),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="One line per test."),
) -> None:
    """Run the end-to-end suite against a cluster: NRT on every node, Guaranteed pods that must and must not fit a
    NUMA zone, a burst on stale NRT, scheduler and exporter restarts; everything it creates is deleted. Extra
    arguments go to pytest (e.g. -x, --junitxml=F). Exit status: pytest's (0 passed, 1 failed, 3 stack not usable)."""
    from knuma.cli.errors import fail
    from knuma.e2e.runner import STACK_UNUSABLE, ClusterUnreachable, run_suite

    try:
        code = run_suite(
            kubeconfig,
            context,
            keyword=keyword,
            scheduler_name=scheduler_name,
            deploy=deploy,
            verbose=verbose,
            extra=list(ctx.args),
        )
    except ClusterUnreachable as err:
        fail(str(err), STACK_UNUSABLE)
    raise typer.Exit(code)
