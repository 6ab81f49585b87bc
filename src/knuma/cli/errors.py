"""Errors to exit statuses, in one place.

`knuma.cli.main` wraps every command in `reporting_errors`: a `KnumaError` that escapes a command becomes
`error: MESSAGE` on stderr and an exit status chosen by its branch of the tree in `knuma.errors` -- 2 for
`InvalidInput` (the user can fix the flags or files), 1 for everything else (the cluster, the kubelet or the machine
failed or refused) -- never a traceback. Commands only catch an error themselves when they add context
(`deploy failed: ...`) or need a different status (`validate` exits 3).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer

from knuma.errors import InvalidInput, KnumaError

__all__ = ["FAILURE", "USAGE_ERROR", "exit_status", "fail", "reporting_errors", "unreachable"]

USAGE_ERROR = 2
"""Bad flags or input files: the message says what to change."""
FAILURE = 1
"""The cluster, the kubelet or the machine failed or refused."""

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str, code: int = USAGE_ERROR) -> NoReturn:
    """Print `error: MESSAGE` on stderr and exit with `code`."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def exit_status(err: KnumaError) -> int:
    """The exit status for an error, by its branch of the tree."""
    return USAGE_ERROR if isinstance(err, InvalidInput) else FAILURE


def reporting_errors(command: Callable[P, R]) -> Callable[P, R]:
    """The command, with a `KnumaError` reported as `error: ...` and its exit status instead of a traceback.

    `functools.wraps` keeps the signature, so typer still sees the command's options."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except KnumaError as err:
            fail(str(err), exit_status(err))

    return run


def unreachable(err: Exception) -> str:
    """The message for an API server that did not answer, naming the URL it was reached at (from the failed
    request, so the user sees which kubeconfig entry was used) and why, in `knuma.kube.errors.cannot_reach`'s words:
    `cannot reach the API server at https://127.0.0.1:1234: connection refused; check ...`."""
    from knuma.kube.errors import CHECK_CONNECTION, KubeApiError, cannot_reach, connection_failure, server_of

    if isinstance(err, KubeApiError):  # knuma.kube's errors carry the URL and the reason themselves
        server = server_of(err.url)
        reason = err.message if err.status is None else f"HTTP {err.status} {err.reason}: {err.message}"
    else:
        try:
            server = server_of(str(err.request.url))  # type: ignore[attr-defined]  # httpx2's RequestError
        except (AttributeError, RuntimeError):  # no request attached
            server = "(unknown URL)"
        reason = connection_failure(err)
    return f"{cannot_reach(server, reason)}; {CHECK_CONNECTION}"
