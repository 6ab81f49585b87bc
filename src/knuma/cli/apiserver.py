"""`knuma apiserver`: run the local Kubernetes-compatible API server."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import typer

from knuma.cli.logopts import log_level_option, resolve


def register(app: typer.Typer) -> None:
    app.command("apiserver")(apiserver)


def apiserver(
    port: int = typer.Option(
        0, "--port", min=0, max=65535, help="TCP port; 0 picks a free one (printed in the kubeconfig)."
    ),
    bind: str = typer.Option("127.0.0.1", "--bind", help="Address to listen on. Loopback by default."),
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="Keep objects in DIR (sqlite, WAL); in-memory when omitted."
    ),
    kubeconfig_out: Path | None = typer.Option(
        None, "--kubeconfig-out", help="Write the kubeconfig to FILE instead of printing it on stdout."
    ),
    insecure: bool = typer.Option(
        False, "--insecure", help="Serve plain HTTP without authentication (kubectl sends tokens only over HTTPS)."
    ),
    token: str | None = typer.Option(
        None, "--token", envvar="KNUMA_APISERVER_TOKEN", help="Bearer token to require (generated when omitted)."
    ),
    token_auth_file: Path | None = typer.Option(
        None,
        "--token-auth-file",
        help='More users: a kube-apiserver static token file (token,user,uid,"group1,group2" per line). Only '
        "system:masters members are authorized (no RBAC); the others are authenticated (TokenReview) but forbidden.",
    ),
    fsync: bool = typer.Option(False, "--fsync", help="With --data-dir: fsync every write (survives power loss)."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Log every request (method, path, status, latency, client) on stderr."
    ),
    log_level: str | None = log_level_option(),
    watch_window: int = typer.Option(
        10_000, "--watch-window", min=1, help="Watch history kept for resuming watches: at most N events."
    ),
    watch_window_bytes: str = typer.Option(
        "16Mi",
        "--watch-window-bytes",
        help="... and at most this much encoded JSON (a quantity: 16Mi, 100M). Older resourceVersions get 410 Gone.",
    ),
    max_connections: int = typer.Option(
        512,
        "--max-connections",
        min=1,
        help="Open connections at most; beyond, the oldest not yet authenticated is closed.",
    ),
    load: list[Path] = typer.Option(
        [],
        "--load",
        metavar="FILE|DIR",
        help="Create the objects of FILE or DIR (*.yaml, *.yml, *.json) at start: CRDs first, then Namespaces, "
        "then the rest. Repeatable.",
    ),
) -> None:
    """Run a Kubernetes-compatible API server (the subset kubectl, lightkube, kopf and knuma use).

    The kubeconfig to reach it is printed on stdout (or written with --kubeconfig-out); logs go to stderr.
    Stop it with Ctrl-C or SIGTERM.
    """
    from knuma.local.apiserver.loader import LoadError, read_manifests
    from knuma.local.apiserver.server import ApiServer, generate_token, persistent_token, serve_forever
    from knuma.quantity import QuantityError, parse_quantity

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("knuma.local.apiserver").setLevel(resolve(verbose, log_level, logging.INFO))
    loopback = bind in ("127.0.0.1", "::1", "localhost")
    if insecure:
        where = "loopback only" if loopback else f"reachable on {bind}"
        prefix = "note" if loopback else "warning"
        typer.echo(f"{prefix}: --insecure: plain HTTP without authentication ({where})", err=True)
    try:
        manifests = read_manifests(load)
    except LoadError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    from knuma.local.apiserver.authn import TokenFileError, read_token_file

    try:
        static_tokens = read_token_file(token_auth_file) if token_auth_file is not None else {}
    except TokenFileError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    from knuma.local.apiserver.kubeconfig import KubeconfigInUse, check_writable

    try:
        if kubeconfig_out is not None:
            check_writable(kubeconfig_out)  # before the server starts: someone else's kubeconfig is not replaced
    except KubeconfigInUse as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    if token is not None and (not token or not token.isprintable() or any(c.isspace() for c in token)):
        # an empty token wrote a kubeconfig without credentials (`user: {}`) that every request answered 401
        shown = "is empty" if not token else "has spaces or control characters"
        typer.echo(
            f"error: --token (or $KNUMA_APISERVER_TOKEN) {shown}: give a bearer token of printable "
            "characters without spaces, or omit it to have one generated",
            err=True,
        )
        raise typer.Exit(2)
    if not insecure and token is None:
        token = persistent_token(data_dir) if data_dir is not None else generate_token()
    try:
        window_bytes = parse_quantity(watch_window_bytes).value()
    except QuantityError as err:
        typer.echo(f"error: --watch-window-bytes: {err}", err=True)
        raise typer.Exit(2) from None
    if window_bytes < 1:
        typer.echo("error: --watch-window-bytes must be at least 1 byte", err=True)
        raise typer.Exit(2)
    server = ApiServer(
        token=None if insecure else token,
        static_tokens=static_tokens,
        data_dir=data_dir,
        fsync=fsync,
        watch_window=watch_window,
        watch_window_bytes=window_bytes,
        max_connections=max_connections,
    )

    def ready(srv: ApiServer) -> None:
        # The kubeconfig names a loopback URL; when bound to every interface, say so (that is what others can reach).
        listening = srv.url
        if srv.host in ("0.0.0.0", "::", ""):
            listening = f"all interfaces ({srv.host or '0.0.0.0'} port {srv.port}); clients here use {srv.url}"
        if kubeconfig_out is not None:
            srv.write_kubeconfig(kubeconfig_out)
            typer.echo(f"knuma apiserver listening on {listening}; kubeconfig written to {kubeconfig_out}", err=True)
        else:
            typer.echo(srv.kubeconfig(), nl=False)
            sys.stdout.flush()
            typer.echo(f"knuma apiserver listening on {listening}", err=True)

    try:
        asyncio.run(serve_forever(server, bind, port, ready, manifests))
    except LoadError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot listen on {bind}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from exc
