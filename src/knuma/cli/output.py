"""What every command prints the same way: the `-o` formats it accepts, and the console its tables go to.

- `-o` is checked by `output_format`, which names the value and the formats the command supports, in the error style
  of every other bad flag (`error: unknown output format 'yml'; use table, json or yaml`, exit 2).
- Tables fit the terminal (rich wraps cells to its width, which `COLUMNS` overrides); piped, they keep their natural
  width unless `COLUMNS` says otherwise, so logs and `grep` see whole rows, and `COLUMNS=80 knuma ... | less` wraps.
- `fitted_table` is how a command fits a table to that width, as kubectl does: columns marked optional are dropped
  (least important first) while the table is wider than the console, a caption names them and says that `-o wide`
  (and `-o json`) shows everything; the columns left wrap their cells (long words fold) instead of ending in an
  ellipsis, so no verdict is ever cut. `-o wide` keeps every column at its natural width, lines longer than the
  terminal included, as `kubectl get -o wide` does. `plain=True` gives kubectl's borderless layout
  (`table_lines` returns it as text lines), `wrap_lines` wraps prose to the same width.
"""

from __future__ import annotations

import io
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from knuma.errors import InvalidInput

if TYPE_CHECKING:  # rich is imported by the commands that print tables, not at start-up
    from rich.console import Console
    from rich.table import Table

__all__ = [
    "PIPED_WIDTH",
    "Column",
    "FittedTable",
    "TextLayout",
    "fitted_table",
    "output_format",
    "print_table",
    "table_console",
    "table_lines",
    "wrap_lines",
]

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


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    justify: Literal["left", "right"] = "left"
    drop: int = 0
    """0: always shown. N > 0: may be dropped when the table is wider than the console, the highest N first (the
    least useful column); a column holding a verdict or an object's name is never optional."""


SHOWS_ALL = "-o wide or -o json shows them"


@dataclass(frozen=True, slots=True)
class FittedTable:
    table: Table
    dropped: tuple[str, ...]
    """The headers of the columns left out for the width; empty with `-o wide` or when everything fits."""
    width: int
    """The width to print it at: the console's, or with `-o wide` the table's natural width when that is more."""
    shows_all: str = SHOWS_ALL
    """What the user can do to see the columns left out (`SHOWS_ALL`, or what a command without `-o` offers)."""

    @property
    def note(self) -> str | None:
        """The line printed under the table when columns were left out, naming them and how to see them."""
        if not self.dropped:
            return None
        return f"not shown at {self.width} columns: {', '.join(self.dropped)} ({self.shows_all})"


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    width: int,
    wide: bool = False,
    title: str | None = None,
    caption: str | None = None,
    plain: bool = False,
    shows_all: str = SHOWS_ALL,
) -> FittedTable:
    """The table of `rows` for a console `width` columns wide (see the module docstring); `shows_all` tells how to
    see the columns left out (a command without `-o` says so)."""
    from rich.console import Console
    from rich.measure import Measurement

    measurer = Console(width=100_000, file=io.StringIO())

    def build(kept: Sequence[int]) -> Table:
        from rich.table import Table

        if plain:  # kubectl's layout: no borders, three spaces between columns, headers as they are
            table = Table(
                title=title,
                caption=caption,
                box=None,
                pad_edge=False,
                padding=(0, 3, 0, 0),
                header_style="none",
                title_justify="left",
                caption_justify="left",
                title_style="none",
                caption_style="none",
            )
        else:
            table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
        for index in kept:
            table.add_column(columns[index].header, justify=columns[index].justify, overflow="fold")
        for row in rows:
            table.add_row(*(row[index] for index in kept))
        return table

    def natural(table: Table) -> int:
        return Measurement.get(measurer, measurer.options, table).maximum

    kept = list(range(len(columns)))
    table = build(kept)
    if wide:
        return FittedTable(table, (), max(width, natural(table)), shows_all)
    optional = sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: (-columns[i].drop, -i))
    dropped: list[int] = []
    while optional and natural(table) > width:
        dropped.append(optional.pop(0))
        kept = [i for i in range(len(columns)) if i not in dropped]
        table = build(kept)
    return FittedTable(table, tuple(columns[i].header for i in sorted(dropped)), width, shows_all)


def print_table(console: Console, fitted: FittedTable) -> None:
    """Print the table, then the note naming the columns left out (wrapped to the console's width)."""
    if fitted.width > console.width:  # -o wide: whole rows, as kubectl prints them
        console.width = fitted.width
    console.print(fitted.table)
    if fitted.note:
        console.print("\n".join(wrap_lines([fitted.note], console.width)), highlight=False, soft_wrap=True)


def table_lines(fitted: FittedTable) -> list[str]:
    """The table as text lines of at most `fitted.width` characters (trailing blanks removed)."""
    from rich.console import Console

    console = Console(width=fitted.width, file=io.StringIO(), color_system=None, highlight=False)
    with console.capture() as captured:
        print_table(console, fitted)
    return [line.rstrip() for line in captured.get().splitlines()]


def wrap_lines(lines: Sequence[str], width: int, *, indent: str = "    ") -> list[str]:
    """Prose lines wrapped at `width` on word boundaries; a continuation keeps the line's own indentation plus
    `indent`, so an item and its explanation stay readable. Lines that fit are unchanged."""
    wrapped: list[str] = []
    for line in lines:
        if len(line) <= width:
            wrapped.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        wrapped += textwrap.wrap(
            line.strip(),
            width=width,
            initial_indent=lead,
            subsequent_indent=lead + indent,
            break_on_hyphens=False,
        ) or [line]
    return wrapped


@dataclass(frozen=True, slots=True)
class TextLayout:
    """A text report's tables and lines fitted to `width` (kubectl's borderless tables, `fitted_table`'s rules):
    what `knuma check` passes to `knuma.deploy.check.render_text`. `wide`: whole rows, nothing left out."""

    width: int
    wide: bool = False
    whole_lines: bool = False
    """Leave prose lines whole (piped without `COLUMNS`: `grep ERROR#` sees each problem on one line)."""

    @classmethod
    def for_console(cls, console: Console, *, wide: bool = False) -> TextLayout:
        """The console's width; piped without `COLUMNS`, whole lines (tables as `table_console` sizes them)."""
        piped = not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit()
        return cls(console.width, wide=wide, whole_lines=piped)

    def table(self, columns: Sequence[tuple[str, int]], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
        fitted = fitted_table(
            [Column(header, drop=drop) for header, drop in columns],
            rows,
            width=max(self.width - len(indent), 20),
            wide=self.wide,
            plain=True,
        )
        return [indent + line if line else line for line in table_lines(fitted)]

    def wrap(self, lines: Sequence[str]) -> list[str]:
        return list(lines) if self.wide or self.whole_lines else wrap_lines(lines, self.width)
