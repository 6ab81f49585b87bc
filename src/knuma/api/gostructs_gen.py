"""Regenerate `knuma.api.gostructs`, the Go shape of the structs a pod spec holds, from `k8s.io/api`'s
`core/v1/types.go`:

    git -C PATH/TO/k8s.io/api show v0.34.0:core/v1/types.go > types.go
    python -m knuma.api.gostructs_gen types.go v0.34.0 > src/knuma/api/gostructs.py

What the OpenAPI definitions (`knuma.local.apiserver.fieldschema`) do not say is which fields are Go pointers: for
`apiequality.Semantic.DeepEqual` a nil pointer differs from a pointer to a zero value (`automountServiceAccountToken`
absent is not `false`), while a plain field's zero value and its absence are the same struct. This reads the Go
declarations for that: from `PodSpec`, every struct of the package a field reaches (through pointers, slices, maps
and inlined embedded structs), each field by its JSON name with whether it is a pointer and which of these structs
its value (or element) is. Types of other packages (`metav1.LabelSelector`, `resource.Quantity`) are leaves.
`tests/api/test_gostructs.py` checks the parser on a copy of upstream declarations and the committed table against
the OpenAPI field tree.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GoField", "main", "parse_structs", "reachable", "render"]

ROOT = "PodSpec"
_STRUCT = re.compile(r"^type (\w+) struct \{$")
_NAMED = re.compile(r"^type (\w+) ((?:\[\]|map\[)\S*)$")
_FIELD = re.compile(r"^\t(\w+)\s+(\S+)\s+`json:\"([^\",]*)[^\"]*\"")
_INLINE = re.compile(r"^\t(\*?[\w.]+)\s+`json:\",inline\"")
_EMBEDDED = re.compile(r"^\t(\*?[\w.]+)\s+`json:\"([^\",]+)")
"""An embedded struct with a JSON name of its own (`metav1.ObjectMeta` as `metadata`): a field like another."""


@dataclass(frozen=True, slots=True)
class GoField:
    pointer: bool
    """`*T`: nil and a pointer to T's zero value are different structs."""
    struct: str | None
    """The struct of this package the value holds (directly, as list elements or as map values), else None."""


def _element(go_type: str, named: dict[str, str]) -> tuple[bool, str]:
    """(pointer, the innermost type name) of a field's Go type: `*T`, `[]T`, `[]*T`, `map[K]V`, a named list or map
    type (`ResourceList`) resolved to its element."""
    pointer = go_type.startswith("*")
    inner = go_type.lstrip("*")
    while True:
        if inner.startswith("[]"):
            inner = inner[2:].lstrip("*")
        elif inner.startswith("map["):
            inner = inner[inner.index("]") + 1 :].lstrip("*")
        elif inner in named:
            inner = named[inner]
        else:
            return pointer, inner


def parse_structs(source: str) -> dict[str, dict[str, GoField]]:
    """Every struct declared at the top level of `source`, its fields by JSON name (inline embedded structs merged
    in)."""
    named: dict[str, str] = {}
    raw: dict[str, list[tuple[str, str, str]]] = {}
    current: list[tuple[str, str, str]] | None = None
    for line in source.splitlines():
        if current is None:
            if match := _STRUCT.match(line):
                current = raw.setdefault(match.group(1), [])
            elif match := _NAMED.match(line):
                named[match.group(1)] = match.group(2)
            continue
        if line == "}":
            current = None
        elif match := _INLINE.match(line):
            current.append(("inline", match.group(1), ""))
        elif match := _EMBEDDED.match(line):
            current.append(("field", match.group(1), match.group(2)))
        elif match := _FIELD.match(line):
            _, go_type, json_name = match.groups()
            if json_name and json_name != "-":
                current.append(("field", go_type, json_name))
    structs: dict[str, dict[str, GoField]] = {}

    def fields(struct: str) -> dict[str, GoField]:
        if struct in structs:
            return structs[struct]
        out: dict[str, GoField] = {}
        for kind, go_type, json_name in raw[struct]:
            if kind == "inline":
                embedded = go_type.lstrip("*")
                if embedded in raw:
                    out.update(fields(embedded))
                continue
            pointer, inner = _element(go_type, named)
            out[json_name] = GoField(pointer, inner if inner in raw else None)
        structs[struct] = out
        return out

    for struct in raw:
        fields(struct)
    return structs


def reachable(structs: dict[str, dict[str, GoField]], root: str = ROOT) -> dict[str, dict[str, GoField]]:
    """The structs a value of `root` can hold, `root` first, then in the order they are found."""
    found: dict[str, dict[str, GoField]] = {}
    pending = [root]
    while pending:
        struct = pending.pop(0)
        if struct in found:
            continue
        found[struct] = structs[struct]
        pending += [f.struct for f in structs[struct].values() if f.struct is not None and f.struct not in found]
    return found


def render(structs: dict[str, dict[str, GoField]], version: str) -> str:
    """The `knuma.api.gostructs` module for `structs` (from `reachable`), read from `k8s.io/api` at `version`."""
    lines = [
        f'"""Generated by `python -m knuma.api.gostructs_gen` from `k8s.io/api` {version} `core/v1/types.go`; do not',
        "edit.",
        "",
        "The Go shape of every struct of `k8s.io/api/core/v1` a `PodSpec` holds: per struct, its fields by JSON name,",
        "each `(pointer, struct)`: whether the field is a Go pointer, and the struct of this table its value (or list",
        "element, or map value) is, if any. `knuma.api.goequality` compares API objects with it as",
        "`apiequality.Semantic.DeepEqual` compares the Go structs.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        '__all__ = ["POD_SPEC", "STRUCTS"]',
        "",
        f'POD_SPEC = "{ROOT}"',
        "STRUCTS: dict[str, dict[str, tuple[bool, str | None]]] = {",
    ]
    for struct, fields in structs.items():
        lines.append(f'    "{struct}": {{')
        for json_name, field in fields.items():
            target = f'"{field.struct}"' if field.struct else "None"
            lines.append(f'        "{json_name}": ({field.pointer}, {target}),')
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m knuma.api.gostructs_gen PATH/TO/core/v1/types.go K8S_IO_API_VERSION", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        print(f"error: cannot read {path}: {err}", file=sys.stderr)
        return 2
    structs = parse_structs(source)
    if ROOT not in structs:
        print(f"error: {path} declares no `type {ROOT} struct`: give k8s.io/api's core/v1/types.go", file=sys.stderr)
        return 2
    sys.stdout.write(render(reachable(structs), args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
