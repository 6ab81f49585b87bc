"""Cluster specs: node pools of named shapes, each with a Topology Manager policy and scope.

The YAML a user writes for `knuma simulate` (`cluster:`) and `knuma up --cluster`, parsed into immutable objects with
errors that name the field. Shared by the simulator and the local cluster.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knuma.api.nrt import Policy, Scope
from knuma.errors import SpecError
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_documents
from knuma.testbed.shapes import BUILTIN_SHAPES, NodeShape, ShapeError, shape_from_dict

__all__ = [
    "ClusterSpec",
    "NodePool",
    "SpecError",
    "boolean",
    "cluster_from_dict",
    "integer",
    "known",
    "load_yaml",
    "mapping",
    "number",
    "optional_string",
]


@dataclass(frozen=True)
class NodePool:
    name: str
    shape: NodeShape
    count: int
    policy: Policy = Policy.SINGLE_NUMA_NODE
    scope: Scope = Scope.CONTAINER

    def node_names(self) -> list[str]:
        return [f"{self.name}-{index:03d}" for index in range(self.count)]


@dataclass(frozen=True)
class ClusterSpec:
    pools: tuple[NodePool, ...]

    @property
    def node_count(self) -> int:
        return sum(p.count for p in self.pools)

    def describe(self) -> str:
        return ", ".join(f"{p.count}x {p.shape.name} ({p.policy}/{p.scope})" for p in self.pools)


NODES_LIMIT = "the most nodes a simulated cluster may have"
"""What `max_nodes` is, in the error that refuses more."""


def cluster_from_dict(raw: Any, where: str = "cluster", max_nodes: int | None = None) -> ClusterSpec:
    """```yaml
    pools:
      - {name: cpu, shape: two-socket, count: 20, policy: single-numa-node, scope: container}
    shapes: {custom: {numaZones: 2, cpusPerZone: 16, memoryPerZone: 64Gi}}
    ```

    `max_nodes`: the most nodes the caller can run (`knuma.sim.spec.MAX_NODES` for the simulator), refused per pool
    and in all before a node is built."""
    raw = mapping(raw, where, "a mapping with `pools`")
    spec_kind(raw, where, "SimCluster")
    known(raw, where, {"apiVersion", "kind", "metadata", "pools", "shapes"})
    shapes = dict(BUILTIN_SHAPES)
    for name, shape_raw in (mapping(raw.get("shapes") or {}, f"{where}.shapes", "a mapping")).items():
        try:
            shapes[str(name)] = shape_from_dict(str(name), shape_raw)
        except ShapeError as err:
            raise SpecError(f"{where}.{err}") from None
    pools_raw = raw.get("pools")
    if not isinstance(pools_raw, list) or not pools_raw:
        raise SpecError(f"{where}.pools: expected a non-empty list of node pools")
    pools: list[NodePool] = []
    for index, pool_raw in enumerate(pools_raw):
        here = f"{where}.pools[{index}]"
        pool_raw = mapping(pool_raw, here, "a mapping with shape and count")
        known(pool_raw, here, {"name", "shape", "count", "policy", "scope"})
        shape_name = pool_raw.get("shape")
        if not isinstance(shape_name, str) or shape_name not in shapes:
            raise SpecError(f"{here}.shape: unknown shape {shape_name!r}; known shapes: {', '.join(sorted(shapes))}")
        count = integer(pool_raw.get("count", 1), f"{here}.count", minimum=1, maximum=max_nodes, limit=NODES_LIMIT)
        try:
            policy = Policy.parse(str(pool_raw.get("policy", Policy.SINGLE_NUMA_NODE.value)))
            scope = Scope.parse(str(pool_raw.get("scope", Scope.CONTAINER.value)))
        except ValueError as err:
            raise SpecError(f"{here}: {err}") from None
        if shapes[shape_name].cpu_manager.align_by_socket and policy is Policy.SINGLE_NUMA_NODE:
            raise SpecError(  # cpumanager ValidateStaticPolicyOptions: such a kubelet does not start
                f"{here}: shape {shape_name} has the CPU manager option align-by-socket, which the kubelet refuses "
                "with the single-numa-node policy; use restricted or best-effort"
            )
        name = optional_string(pool_raw, "name", here) or f"{shape_name}-{index}"
        pools.append(NodePool(name, shapes[shape_name], count, policy, scope))
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise SpecError(f"{where}.pools: pool names must be unique, got {names}")
    spec = ClusterSpec(tuple(pools))
    if max_nodes is not None and spec.node_count > max_nodes:
        raise SpecError(
            f"{where}.pools: {spec.node_count} nodes in all is more than {max_nodes}, {NODES_LIMIT}; lower the counts"
        )
    return spec


def load_yaml(path: Path) -> Any:
    """The first YAML document of `path`, with an error that names the file."""
    try:
        text = read_user_file(path)
    except UnreadableFile as err:
        raise SpecError(f"cannot read {path}: {err.reason}") from None
    try:
        documents = [d for d in yaml_documents(text) if d is not None]
    except YamlProblem as err:
        raise SpecError(f"{path}: {err}") from None
    if not documents:
        raise SpecError(f"{path}: the file is empty")
    return documents[0]


def mapping(raw: Any, where: str, expected: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: expected {expected}, got {type(raw).__name__}")
    return raw


def boolean(value: Any, where: str) -> bool:
    """A spec's true/false field. A string is refused, as Kubernetes' configuration decoders refuse one: `"false"` is
    a non-empty string, which Python would take as true."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        raise SpecError(f"{where}: expected true or false, got the string {value!r}; write it without quotes")
    raise SpecError(f"{where}: expected true or false, got {value!r}")


def optional_string(raw: Mapping[str, Any], key: str, where: str) -> str | None:
    """`raw[key]` when it is a string; None when it is absent or null; an error naming the field otherwise (a YAML
    `2024` or `true` is not a name: quote it)."""
    value = raw.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float | datetime.date):  # scalars YAML reads as such: `2024`, `yes`, `2024-01-02`
        raise SpecError(f"{where}.{key}: expected a string, got {value!r}; quote it to make it one")
    raise SpecError(f"{where}.{key}: expected a string, got {type(value).__name__}")


def integer(value: Any, where: str, *, minimum: int = 0, maximum: int | None = None, limit: str = "") -> int:
    """A spec's integer field: an int, not a bool (YAML `true` is an int in Python), a float or a string, from
    `minimum` to `maximum`; above it the error says what the limit is (`limit`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        raise SpecError(f"{where}: expected {expected}, got {value!r}")
    if maximum is not None and value > maximum:
        raise SpecError(f"{where}: {value} is more than {maximum}, {limit or 'the limit'}; lower it")
    return value


def number(
    value: Any,
    where: str,
    *,
    minimum: float | None = None,
    positive: bool = False,
    maximum: float | None = None,
    limit: str = "",
    hint: str = "",
) -> float:
    """A spec's number field: an int or a float, not a bool (YAML `true` is an int in Python), finite (not `.nan`,
    `.inf` or an integer beyond a float's range), positive or at least `minimum` when asked, at most `maximum` (the
    error then says what the limit is: `limit`). `hint` follows the refusal of an infinite number (what to write
    instead, e.g. for a lifetime: `infinite`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: expected a number, got {value!r}")
    try:
        result = float(value)
    except OverflowError:  # an integer too large for a float
        result = math.inf
    if not math.isfinite(result):
        raise SpecError(f"{where}: must be a finite number, got {value!r}{hint if result > 0 else ''}")
    if positive and result <= 0:
        raise SpecError(f"{where}: expected a positive number, got {value!r}")
    if minimum is not None and result < minimum:
        raise SpecError(f"{where}: expected a number >= {minimum:g}, got {value!r}")
    if maximum is not None and result > maximum:
        raise SpecError(f"{where}: {value!r} is more than {maximum:.15g}, {limit or 'the limit'}; lower it")
    return result


SPEC_FLAGS = {"SimCluster": "--cluster", "SimWorkload": "--workload", "SimScenario": "--scenario"}
"""The spec kinds and the `knuma simulate` flag that takes each."""


def spec_kind(raw: Mapping[str, Any], where: str, expected: str) -> None:
    """Check the fields every spec shares: `kind`, `apiVersion` (strings) and `metadata` (a mapping; its `name` a
    string). Refuse a file of another spec kind (a SimCluster given to --workload) with the flag that takes it;
    otherwise its fields would be reported as unknown, which says nothing about the mix-up. Other kinds are left to
    the caller (a spec without `kind` is fine)."""
    kind = optional_string(raw, "kind", where)
    optional_string(raw, "apiVersion", where)
    if raw.get("metadata") is not None:
        optional_string(mapping(raw["metadata"], f"{where}.metadata", "a mapping"), "name", f"{where}.metadata")
    if kind != expected and kind in SPEC_FLAGS:
        raise SpecError(f"{where}: this is a {kind}, not a {expected}; give it to {SPEC_FLAGS[kind]}")


def known(raw: Mapping[str, Any], where: str, known: set[str]) -> None:
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {', '.join(unknown)}; expected some of: {', '.join(sorted(known))}")
