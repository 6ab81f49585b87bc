"""What every command prints the same way: the `-o` formats it accepts, and the console its tables go to.

- `-o` is checked by `output_format`, which names the value and the formats the command supports, in the error style
  of every other bad flag (`error: unknown output format 'yml'; use table, json or yaml`, exit 2).
- Tables fit the terminal (rich wraps cells to its width, which `COLUMNS` overrides); piped, they keep their natural
  width unless `COLUMNS` says otherwise, so logs and `grep` see whole rows, and `COLUMNS=80 knuma ... | less` wraps.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from knuma.errors import InvalidInput

if TYPE_CHECKING:  # rich is imported by the commands that print tables, not at start-up
    from rich.console import Console

__all__ = ["PIPED_WIDTH", "output_format", "table_console"]

PIPED_WIDTH = 200
"""Width of tables written to a pipe or a file when `COLUMNS` is not set."""


def output_format(value: str, allowed: tuple[str, ...]) -> str:
    """`value` when it is one of `allowed`; else an `InvalidInput` naming both."""
    if value in allowed:
        return value
    choices = f"{', '.join(allowed[:-1])} or {allowed[-1]}" if len(allowed) > 1 else allowed[0]
    raise InvalidInput(f"unknown output format {value!r}; use {choices}")


def table_console(*, stderr: bool = False) -> Console:
    """A console for tables: the terminal's width (or `COLUMNS`); piped, `COLUMNS` or `PIPED_WIDTH`."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console
    return Console(stderr=stderr, width=PIPED_WIDTH)
