"""Shell completion of option values: scenario names, schedulers, node shapes, Topology Manager policies and scopes,
deployer components, output formats.

`knuma --install-completion` installs the shell's hook; then `knuma up --policy <TAB>` offers the policies. Each
function imports what it lists only when the shell asks, so start-up stays light (`tests/cli/test_entry_point.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = [
    "choices",
    "components",
    "exporter_modes",
    "output_formats",
    "policies",
    "scenarios",
    "schedulers",
    "scopes",
    "shapes",
]

Completer = Callable[[str], list[str]]


def _matching(values: Iterable[str], incomplete: str) -> list[str]:
    return [v for v in values if v.startswith(incomplete)]


def policies(incomplete: str) -> list[str]:
    from knuma.api.nrt import Policy

    return _matching((p.value for p in Policy), incomplete)


def scopes(incomplete: str) -> list[str]:
    from knuma.api.nrt import Scope

    return _matching((s.value for s in Scope), incomplete)


def shapes(incomplete: str) -> list[str]:
    from knuma.testbed.shapes import BUILTIN_SHAPES

    return _matching(sorted(BUILTIN_SHAPES), incomplete)


def scenarios(incomplete: str) -> list[str]:
    from knuma.sim.scenarios import BUILTIN, DRA_SCENARIO

    return _matching([*BUILTIN, DRA_SCENARIO], incomplete)


def schedulers(incomplete: str) -> list[str]:
    """A comma-separated list: complete its last item, keeping the ones before."""
    from knuma.sim.schedulers import ALL_SCHEDULERS

    done, _, last = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    chosen = set(done.split(",")) if done else set()
    return [prefix + name for name in ALL_SCHEDULERS if name.startswith(last) and name not in chosen]


def components(incomplete: str) -> list[str]:
    from knuma.deploy.options import Component

    return _matching((c.value for c in Component), incomplete)


def exporter_modes(incomplete: str) -> list[str]:
    return _matching(("auto", "process", "in-process"), incomplete)


def choices(*values: str) -> Completer:
    """A completer offering a fixed set of values (`--deploy never|missing`, `--metrics-mode`, ...)."""

    def complete(incomplete: str) -> list[str]:
        return _matching(values, incomplete)

    return complete


def output_formats(*formats: str) -> Completer:
    """A completer for `-o` offering `formats`."""
    return choices(*formats)
