"""`knuma exporter` (registered once the exporter lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    del app
