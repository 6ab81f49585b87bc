"""The API seam, checked on the source: HTTP status codes are turned into typed errors in one place.

Only `knuma.kube` (its request path, `knuma.kube.rest`, and the modules built on it) and the API server knuma ships
(`knuma.local.apiserver`, which produces statuses) may look at a response's `status_code` or call
`raise_for_status()`; everything else catches `knuma.kube.errors` classes. The merge-patch content type is spelled
once, in `knuma.api.types` (re-exported as `knuma.kube.MERGE_PATCH`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ALLOWED = ("knuma/kube/", "knuma/local/apiserver/")
STATUS_ATTRIBUTES = {"status_code", "raise_for_status"}
MERGE_PATCH_HOME = "knuma/api/types.py"


def _sources() -> dict[str, str]:
    return {path.relative_to(SRC).as_posix(): path.read_text() for path in sorted((SRC / "knuma").rglob("*.py"))}


SOURCES = _sources()


def status_checks(source: str, name: str = "<source>") -> Iterator[str]:
    """`line: attribute` for every use of a response's status outside the seam."""
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Attribute) and node.attr in STATUS_ATTRIBUTES:
            yield f"{node.lineno}: .{node.attr}"


def merge_patch_literals(source: str, name: str = "<source>") -> Iterator[int]:
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Constant) and node.value == "application/merge-patch+json":
            yield node.lineno


def test_there_are_sources_to_check() -> None:
    assert "knuma/scheduler/daemon/loop.py" in SOURCES and "knuma/kube/rest.py" in SOURCES


@pytest.mark.parametrize("name", [n for n in SOURCES if not n.startswith(ALLOWED)])
def test_no_status_code_checks_outside_knuma_kube(name: str) -> None:
    found = list(status_checks(SOURCES[name], name))
    assert not found, (
        f"{name} looks at HTTP statuses ({', '.join(found)}); send the request through knuma.kube.rest and catch "
        "knuma.kube.errors (Conflict, NotFound, Gone, Forbidden, Unauthorized, Invalid, Unavailable) instead"
    )


def test_the_merge_patch_content_type_is_spelled_once() -> None:
    places = [f"{name}:{line}" for name, text in SOURCES.items() for line in merge_patch_literals(text, name)]
    assert len(places) == 1 and places[0].startswith(MERGE_PATCH_HOME + ":"), places


def test_the_check_catches_a_status_comparison() -> None:
    offending = "async def bind(http):\n    response = await http.post('/x')\n    if response.status_code == 409:\n"
    offending += "        return\n    response.raise_for_status()\n"
    assert list(status_checks(offending)) == ["3: .status_code", "5: .raise_for_status"]
