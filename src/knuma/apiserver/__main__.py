"""`python -m knuma.apiserver ...` is `knuma apiserver ...` (handy where the console script is not on PATH)."""

from __future__ import annotations

import typer

from knuma.cli.apiserver import apiserver


def main() -> None:
    typer.run(apiserver)


if __name__ == "__main__":
    main()
