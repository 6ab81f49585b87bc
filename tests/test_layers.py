"""The layer rule, checked on the source: the product never imports the local cluster, the simulator, benchmarks,
testing or the CLI; the inner product layers never import the outer ones; and no two modules import each other.

Every `import` statement counts, also those inside functions and `TYPE_CHECKING` blocks: a lazy import is still a
dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

PURE = {"knuma.quantity", "knuma.duration", "knuma.errors", "knuma.api", "knuma.topology", "knuma.devices"}
"""Values, objects and the kubelet model: no I/O, no other knuma layer."""
PRODUCT_RANK = {
    **dict.fromkeys(PURE, 0),
    **dict.fromkeys(
        ("knuma", "knuma.manifests", "knuma.podresources", "knuma.serving", "knuma.kube", "knuma.scheduler"), 1
    ),
    "knuma.exporter": 1,
    "knuma.deploy": 2,
    "knuma.operator": 3,
}
"""The product, inside out: a package imports packages of its own rank or lower (the operator builds on the deployer,
the deployer on the daemons' and `kube`'s modules, everything on the pure core)."""
# which top-level packages each package may import (besides itself and the product)
ALLOWED_OUTER: dict[str, set[str]] = {
    "knuma.testbed": set(),
    "knuma.local": {"knuma.testbed"},
    "knuma.sim": {"knuma.testbed"},
    "knuma.testing": {"knuma.testbed", "knuma.local"},
    "knuma.e2e": set(),
    "knuma.bench": {"knuma.testbed", "knuma.local", "knuma.sim", "knuma.testing"},
    "knuma.cli": {"knuma.testbed", "knuma.local", "knuma.sim", "knuma.testing", "knuma.bench", "knuma.e2e"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((SRC / "knuma").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield candidate if candidate in MODULES else base


def _top(module: str) -> str:
    """The layer a module belongs to: `knuma.scheduler.cache.nrt` -> `knuma.scheduler`."""
    if module == "knuma.__main__":
        return "knuma.cli"  # `python -m knuma` is the command line
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


GRAPH = {m: {i for i in _imports(m, p) if i in MODULES and i != m} for m, p in MODULES.items()}


def test_the_module_list_is_not_empty() -> None:
    assert {"knuma.api.pod", "knuma.scheduler.cache.nrt", "knuma.local.apiserver.server"} <= MODULES.keys()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_only_its_own_or_inner_layers(module: str) -> None:
    layer = _top(module)
    broken = []
    for target in sorted(GRAPH[module]):
        target_layer = _top(target)
        if target_layer == layer or target == "knuma":
            continue
        if layer in PRODUCT_RANK:
            ok = PRODUCT_RANK.get(target_layer, 99) <= PRODUCT_RANK[layer]
        else:
            ok = target_layer in PRODUCT_RANK or target_layer in ALLOWED_OUTER.get(layer, set())
        if not ok:
            broken.append(target)
    assert not broken, f"{module} ({layer}) imports an outer layer: {broken}"


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over module imports: every component is a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in GRAPH[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not cycles, f"import cycles: {cycles}"


def test_the_rule_catches_a_product_module_importing_the_local_cluster() -> None:
    """The check itself: a product module that imported `knuma.local` would be reported."""
    GRAPH["knuma.scheduler.cache.nrt"].add("knuma.local.apiserver.server")
    try:
        with pytest.raises(AssertionError, match="imports an outer layer"):
            test_module_imports_only_its_own_or_inner_layers("knuma.scheduler.cache.nrt")
    finally:
        GRAPH["knuma.scheduler.cache.nrt"].discard("knuma.local.apiserver.server")
