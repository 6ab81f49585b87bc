"""Fixtures of the `knuma up` end-to-end tests: `start(*args)` runs `knuma up` on a data directory of the test and
kills whatever is left at the end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.local.up.test_up import Up


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def start(tmp_path: Path, home: Path) -> Iterator[Callable[..., Up]]:
    running: list[Up] = []

    def run(*args: str) -> Up:
        up = Up(tmp_path / "cluster", home, *args)
        running.append(up)
        return up

    yield run
    for up in running:
        up.kill()
