"""`-v/--verbose` and `--log-level` on every command, meaning the same everywhere.

`--log-level debug|info|warning|error` sets the level of knuma's logs on stderr; `-v` is `--log-level debug` (the
exporter and the operator also count it: `-vv` is the most detail they have). `--log-level` wins over `-v`.
The daemons (`scheduler`, `exporter`, `operator`, `apiserver`, `up`) configure their own log format and call
`resolve`; every other command gets both options from `with_log_options`, which configures plain stderr logging only
when one of them is given, so its output is unchanged otherwise.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from collections.abc import Callable
from typing import Any

import typer

from knuma.errors import InvalidInput

__all__ = ["LOG_LEVELS", "log_level_option", "resolve", "with_log_options"]

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_LEVEL_HELP = "Log level on stderr: debug, info, warning or error (-v is debug)."


def _complete(incomplete: str) -> list[str]:
    return [level for level in LOG_LEVELS if level.startswith(incomplete)]


def log_level_option() -> Any:
    return typer.Option(None, "--log-level", metavar="LEVEL", help=LOG_LEVEL_HELP, autocompletion=_complete)


def resolve(verbose: int | bool, log_level: str | None, default: int) -> int:
    """The logging level from `-v` and `--log-level` (which wins), else `default`."""
    if log_level is not None:
        if log_level.lower() not in LOG_LEVELS:
            raise InvalidInput(f"unknown --log-level {log_level!r}; use {', '.join(LOG_LEVELS[:-1])} or error")
        level: int = getattr(logging, log_level.upper())
        return level
    return logging.DEBUG if verbose else default


def _declared(signature: inspect.Signature) -> set[str]:
    names: set[str] = set()
    for parameter in signature.parameters.values():
        names.update(getattr(parameter.default, "param_decls", None) or ())
    return names


def with_log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` with whichever of `-v/--verbose` and `--log-level` it lacks (a command's own `-v`, e.g. `knuma e2e`'s
    test verbosity, is kept)."""
    signature = inspect.signature(func)
    declared = _declared(signature)
    extra: list[inspect.Parameter] = []
    if "-v" not in declared and "--verbose" not in declared:
        option = typer.Option(0, "-v", "--verbose", count=True, help="More logs on stderr (debug).")
        extra.append(inspect.Parameter("knuma_verbose", inspect.Parameter.KEYWORD_ONLY, default=option, annotation=int))
    if "--log-level" not in declared:
        extra.append(
            inspect.Parameter(
                "knuma_log_level", inspect.Parameter.KEYWORD_ONLY, default=log_level_option(), annotation=str | None
            )
        )
    if not extra:
        return func

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        verbose = kwargs.pop("knuma_verbose", 0)
        level_name = kwargs.pop("knuma_log_level", None)
        if verbose or level_name is not None:
            logging.basicConfig(
                level=resolve(verbose, level_name, logging.WARNING),
                stream=sys.stderr,
                format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
                force=True,
            )
        return func(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *extra])  # type: ignore[attr-defined]
    names = {"knuma_verbose": "int", "knuma_log_level": "str | None"}
    wrapper.__annotations__ = {**func.__annotations__, **{p.name: names[p.name] for p in extra}}
    return wrapper
