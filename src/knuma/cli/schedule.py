"""`knuma schedule`: explain one pod against a set of nodes (placeholder until the scheduler core lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    del app
