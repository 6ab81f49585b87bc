"""`knuma apiserver` (registered once the apiserver lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    del app
