"""The static CPU manager's policy options (`cpuManagerPolicyOptions`) and what they change in admission.

Options (kubelet `cpumanager/policy_options.go`, `NewStaticPolicyOptions`; values parsed as Go's `strconv.ParseBool`):

- `full-pcpus-only` (beta, on by default since 1.23 behind `CPUManagerPolicyBetaOptions`): `Allocate` rejects a
  container whose exclusive CPUs are not a multiple of the CPUs per core with `SMTAlignmentError` (1.22+), and, since
  1.27 (kubernetes#114114), one asking for more CPUs than the free physical cores hold once the siblings of reserved
  CPUs are set aside (`GetAvailablePhysicalCPUs`).
- `distribute-cpus-across-numa` (alpha 1.23, beta 1.33): a container that needs more than one NUMA node gets its CPUs
  spread evenly over them (`takeByTopologyNUMADistributed`) instead of packed.
- `align-by-socket` (alpha 1.25): a hint is also preferred when it spans the fewest sockets the request needs
  (`isHintSocketAligned`), and CPUs are taken from the whole sockets of the hint (`getAlignedCPUs`). The kubelet
  refuses to start with it under `single-numa-node` (`ValidateStaticPolicyOptions`).
- `strict-cpu-reservation` (alpha 1.32, beta 1.33): reserved CPUs leave the shared pool too; exclusive admission does
  not change, since exclusive CPUs never came from the reserved set.
- `distribute-cpus-across-cores`, `prefer-align-cpus-by-uncorecache`: which CPU ids inside a NUMA node; no effect on
  per-NUMA admission.

Without any option the machine's sockets still matter: `newCPUAccumulator` packs NUMA nodes first (`numaFirst`) when
the machine has at least as many sockets as NUMA nodes and sockets first (`socketsFirst`) when it has more NUMA nodes
than sockets (sub-NUMA clustering, AMD NPS2/NPS4), which changes which NUMA nodes a container spanning several gets
its CPUs from (`numa_sockets`, `sockets_first`).

Published on the NodeResourceTopology as knuma attributes (see `attributes()`), read back by `from_attributes`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from itertools import combinations

from knuma.errors import ConfigError

__all__ = [
    "ATTR_CPUS_PER_CORE",
    "ATTR_CPU_MANAGER_POLICY",
    "ATTR_NUMA_SOCKETS",
    "ATTR_RESERVED_CORE_SIBLINGS",
    "CPUManagerOptions",
    "CPUManagerOptionsError",
    "distribute_across_numa",
    "numa_order",
]

OPTION_FULL_PCPUS_ONLY = "full-pcpus-only"
OPTION_DISTRIBUTE_ACROSS_NUMA = "distribute-cpus-across-numa"
OPTION_ALIGN_BY_SOCKET = "align-by-socket"
OPTION_STRICT_RESERVATION = "strict-cpu-reservation"
OPTION_DISTRIBUTE_ACROSS_CORES = "distribute-cpus-across-cores"
OPTION_UNCORE_CACHE = "prefer-align-cpus-by-uncorecache"
KNOWN_OPTIONS = (
    OPTION_FULL_PCPUS_ONLY,
    OPTION_DISTRIBUTE_ACROSS_NUMA,
    OPTION_ALIGN_BY_SOCKET,
    OPTION_STRICT_RESERVATION,
    OPTION_DISTRIBUTE_ACROSS_CORES,
    OPTION_UNCORE_CACHE,
)

ATTR_CPU_MANAGER_POLICY = "cpuManagerPolicy"
"""`none` or `static`, as the kubelet configuration spells it."""
ATTR_OPTION_PREFIX = "cpuManagerPolicyOption"
"""`cpuManagerPolicyOption` + the option in CamelCase (`cpuManagerPolicyOptionFullPCPUsOnly: "true"`), like the
Topology Manager's `topologyManagerOptionPreferClosestNumaNodes`."""
ATTR_CPUS_PER_CORE = "cpuManagerCPUsPerCore"
"""Hardware threads per core (`CPUTopology.CPUsPerCore`): the SMT group `full-pcpus-only` allocates in."""
ATTR_RESERVED_CORE_SIBLINGS = "cpuManagerReservedCoreSiblings"
"""CPUs not reserved whose core holds a reserved CPU: `full-pcpus-only` never hands them out."""
ATTR_NUMA_SOCKETS = "cpuManagerNUMANodeSockets"
"""NUMA id -> socket id, `0:0,1:0,2:1,3:1`: for `align-by-socket`, and for the CPU order on machines with more NUMA
nodes than sockets (`socketsFirst`). Without it a NUMA node is taken to be its own socket."""

_ATTR_NAMES = {
    OPTION_FULL_PCPUS_ONLY: "FullPCPUsOnly",
    OPTION_DISTRIBUTE_ACROSS_NUMA: "DistributeCPUsAcrossNUMA",
    OPTION_ALIGN_BY_SOCKET: "AlignBySocket",
    OPTION_STRICT_RESERVATION: "StrictCPUReservation",
    OPTION_DISTRIBUTE_ACROSS_CORES: "DistributeCPUsAcrossCores",
    OPTION_UNCORE_CACHE: "PreferAlignCPUsByUncoreCache",
}
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class CPUManagerOptionsError(ConfigError):
    """A `cpuManagerPolicyOptions` entry the kubelet would refuse at start-up."""


def parse_bool(value: str, where: str) -> bool:
    """Go's `strconv.ParseBool`, which the kubelet uses for every boolean policy option."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise CPUManagerOptionsError(f'{where}: bad value {value!r}: expected "true" or "false"')


@dataclass(frozen=True)
class CPUManagerOptions:
    policy: str = "static"
    full_pcpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    strict_cpu_reservation: bool = False
    others: frozenset[str] = frozenset()
    """Options set to true that do not change per-NUMA admission (kept to publish them)."""
    cpus_per_core: int = 1
    reserved_core_siblings: int = 0
    numa_sockets: Mapping[int, int] = field(default_factory=dict)

    @cached_property
    def key(self) -> Hashable:
        """Every option and fact as a hashable (part of `NodeTopology.admission_key`)."""
        values = (getattr(self, f.name) for f in fields(self))
        return tuple(tuple(sorted(v.items())) if isinstance(v, Mapping) else v for v in values)

    @property
    def cpu_group_size(self) -> int:
        """`cpuGroupSize` of `takeByTopology`: whole cores under `full-pcpus-only`, single CPUs otherwise."""
        return self.cpus_per_core if self.full_pcpus_only else 1

    @classmethod
    def parse(cls, options: Mapping[str, object], where: str = "cpuManagerPolicyOptions") -> CPUManagerOptions:
        """`NewStaticPolicyOptions`: every option known, every value a Go bool."""
        flags: dict[str, bool] = {}
        for name, raw in options.items():
            if name not in KNOWN_OPTIONS:
                raise CPUManagerOptionsError(
                    f"{where}: unknown CPU Manager Policy option {name!r}; known: {', '.join(KNOWN_OPTIONS)}"
                )
            flags[name] = parse_bool(str(raw), f"{where}.{name}")
        return cls(
            full_pcpus_only=flags.get(OPTION_FULL_PCPUS_ONLY, False),
            distribute_cpus_across_numa=flags.get(OPTION_DISTRIBUTE_ACROSS_NUMA, False),
            align_by_socket=flags.get(OPTION_ALIGN_BY_SOCKET, False),
            strict_cpu_reservation=flags.get(OPTION_STRICT_RESERVATION, False),
            others=frozenset(n for n in (OPTION_DISTRIBUTE_ACROSS_CORES, OPTION_UNCORE_CACHE) if flags.get(n)),
        )

    def enabled(self) -> list[str]:
        """The options set to true, in `KNOWN_OPTIONS` order."""
        on = {
            OPTION_FULL_PCPUS_ONLY: self.full_pcpus_only,
            OPTION_DISTRIBUTE_ACROSS_NUMA: self.distribute_cpus_across_numa,
            OPTION_ALIGN_BY_SOCKET: self.align_by_socket,
            OPTION_STRICT_RESERVATION: self.strict_cpu_reservation,
        }
        return [name for name in KNOWN_OPTIONS if on.get(name) or name in self.others]

    def attributes(self) -> dict[str, str]:
        """The NRT attributes knuma publishes for these options (only what is set, so plain nodes stay plain)."""
        out: dict[str, str] = {}
        for name in self.enabled():
            out[ATTR_OPTION_PREFIX + _ATTR_NAMES[name]] = "true"
        if self.full_pcpus_only and self.cpus_per_core > 1:
            out[ATTR_CPUS_PER_CORE] = str(self.cpus_per_core)
        if self.full_pcpus_only and self.reserved_core_siblings:
            out[ATTR_RESERVED_CORE_SIBLINGS] = str(self.reserved_core_siblings)
        if self.numa_sockets and (self.align_by_socket or self.sockets_first):
            out[ATTR_NUMA_SOCKETS] = ",".join(f"{n}:{s}" for n, s in sorted(self.numa_sockets.items()))
        return out

    @classmethod
    def from_attributes(cls, attributes: Mapping[str, str]) -> CPUManagerOptions:
        """Read what `attributes()` wrote; anything malformed reads as unset (a producer's mistake must not make a
        node unschedulable)."""

        def flag(name: str) -> bool:
            return attributes.get(ATTR_OPTION_PREFIX + _ATTR_NAMES[name], "").lower() == "true"

        sockets: dict[int, int] = {}
        for pair in attributes.get(ATTR_NUMA_SOCKETS, "").split(","):
            numa, sep, socket = pair.partition(":")
            if sep and numa.strip().isdigit() and socket.strip().isdigit():
                sockets[int(numa)] = int(socket)
        return cls(
            policy=attributes.get(ATTR_CPU_MANAGER_POLICY, "static") or "static",
            full_pcpus_only=flag(OPTION_FULL_PCPUS_ONLY),
            distribute_cpus_across_numa=flag(OPTION_DISTRIBUTE_ACROSS_NUMA),
            align_by_socket=flag(OPTION_ALIGN_BY_SOCKET),
            strict_cpu_reservation=flag(OPTION_STRICT_RESERVATION),
            others=frozenset(n for n in (OPTION_DISTRIBUTE_ACROSS_CORES, OPTION_UNCORE_CACHE) if flag(n)),
            cpus_per_core=_positive(attributes.get(ATTR_CPUS_PER_CORE, ""), 1),
            reserved_core_siblings=_positive(attributes.get(ATTR_RESERVED_CORE_SIBLINGS, ""), 0),
            numa_sockets=sockets,
        )

    def smt_alignment_error(self, requested: int, free_cpus: int) -> str:
        """`staticPolicy.Allocate` under `full-pcpus-only`: the `SMTAlignmentError` message, or "" when the request
        passes. `free_cpus` is the node's free exclusive CPUs (the default set minus reserved ones)."""
        if not self.full_pcpus_only:
            return ""
        group = self.cpu_group_size
        if requested % group:
            return f"SMT Alignment Error: requested {requested} cpus not multiple cpus per core = {group}"
        physical = max(0, free_cpus - self.reserved_core_siblings)
        if requested > physical:
            return (
                f"SMT Alignment Error: not enough free physical CPUs: available physical CPUs = {physical}, "
                f"requested CPUs = {requested}, CPUs per core = {group}"
            )
        return ""

    @property
    def sockets_first(self) -> bool:
        """`newCPUAccumulator` picks `socketsFirst` (not `numaFirst`) when `NumSockets < NumNUMANodes`; unknown
        sockets count as one per NUMA node, which is `numaFirst`."""
        return bool(self.numa_sockets) and len(set(self.numa_sockets.values())) < len(self.numa_sockets)

    def socket_of(self, numa_id: int) -> int:
        """The socket of a NUMA node; a NUMA node the map does not name is its own socket."""
        return self.numa_sockets.get(numa_id, -1 - numa_id)

    def socket_aligned(self, numa_ids: Sequence[int], min_width: int, numa_count: int) -> bool:
        """`isHintSocketAligned`: the hint spans exactly the fewest sockets `min_width` NUMA nodes need."""
        sockets = {self.socket_of(n) for n in range(numa_count)} if self.numa_sockets else set()
        if not sockets:
            return False
        per_socket = numa_count // len(sockets)
        if per_socket == 0:
            return False
        needed = (min_width + per_socket - 1) // per_socket
        return len({self.socket_of(n) for n in numa_ids}) == needed


def _positive(text: str, default: int) -> int:
    return int(text) if text.strip().isdigit() and int(text) > 0 else default


def distribute_across_numa(
    available: Mapping[int, int],
    request: int,
    group: int,
    total_cpus: int,
    total_numas: int,
    options: CPUManagerOptions | None = None,
) -> dict[int, int] | None:
    """`takeByTopologyNUMADistributed` at NUMA-count granularity: how many CPUs each NUMA node of `available` (free
    CPUs per node, the aligned set) gives, or None when the kubelet falls back to packing (the request is not a
    multiple of `group`, or no combination distributes it).

    Combinations of k nodes are tried for k from `rangeNUMANodesNeededToSatisfy`'s minimum upwards, nodes in
    `sortAvailableNUMANodes` order (`numa_order`: by socket first when `options` say the machine has more NUMA nodes
    than sockets); each gets `request / k` rounded down to groups, the remainder
    goes in groups to the subset that leaves the lowest standard deviation of free CPUs, first found wins.
    """
    if request % group or request > sum(available.values()):
        return None
    numas = numa_order(available, options or CPUManagerOptions())
    groups_total = (total_cpus - 1) // group + 1
    groups_per_numa = (groups_total - 1) // total_numas + 1
    groups_needed = (request - 1) // group + 1
    min_numas = (groups_needed - 1) // groups_per_numa + 1
    max_numas = min(groups_needed, len(numas))
    for k in range(min_numas, max_numas + 1):
        best: tuple[float, tuple[int, ...], tuple[int, ...]] | None = None
        for combo in combinations(numas, k):
            if best is not None and best[0] == 0:
                break
            if sum(available[n] for n in combo) < request:
                continue
            if sum(available[n] // group for n in combo) * group < request:
                continue
            share = request // k // group * group
            if any(available[n] < share for n in combo):
                continue
            after = {n: available[n] for n in numas}
            for n in combo:
                after[n] -= share
            remainder = request - share * k
            local: tuple[float, tuple[int, ...]] | None = None
            if remainder == 0:
                local = (_stddev(list(after.values())), ())
            candidates = [n for n in combo if after[n] >= group]
            for width in range(len(candidates), 0, -1):
                if remainder <= 0:
                    break
                for subset in combinations(candidates, width):
                    trial = dict(after)
                    left = remainder
                    if sum(trial[n] for n in subset) < left:
                        continue
                    if not _hand_out(trial, subset, left, group):
                        continue  # the kubelet would spin here; no such split exists
                    balance = _stddev(list(trial.values()))
                    if local is None or balance < local[0]:
                        local = (balance, subset)
            if local is not None and (best is None or local[0] < best[0]):
                best = (local[0], combo, local[1])
        if best is None:
            continue
        _, combo, extra = best
        share = request // len(combo) // group * group
        after = {n: available[n] - share for n in combo}
        _hand_out(after, extra, request - share * len(combo), group)
        return {n: available[n] - after[n] for n in combo if available[n] - after[n]}
    return None


def numa_order(available: Mapping[int, int], options: CPUManagerOptions) -> list[int]:
    """`sortAvailableNUMANodes` of the NUMA nodes with available CPUs (`available`: NUMA id -> CPUs): `numaFirst`
    sorts them by available CPUs, fewest first, ties by id (`cpuAccumulator.sort`); `socketsFirst` sorts the sockets
    so, by the CPUs available in them, and lists each socket's NUMA nodes sorted so (cpu_assignment.go)."""
    present = [n for n, count in available.items() if count > 0]
    if not options.sockets_first:
        return sorted(present, key=lambda n: (available[n], n))
    per_socket: dict[int, int] = {}
    for numa_id in present:
        socket = options.socket_of(numa_id)
        per_socket[socket] = per_socket.get(socket, 0) + available[numa_id]

    def key(numa_id: int) -> tuple[int, int, int, int]:
        socket = options.socket_of(numa_id)
        return (per_socket[socket], socket, available[numa_id], numa_id)

    return sorted(present, key=key)


def _hand_out(free: dict[int, int], subset: Sequence[int], left: int, group: int) -> bool:
    """Take `left` CPUs from `free` in groups, round-robin over `subset`; False when a round takes nothing."""
    while left > 0:
        before = left
        for n in subset:
            if left == 0:
                break
            if free[n] < group:
                continue
            free[n] -= group
            left -= group
        if left == before:
            return False
    return True


def _stddev(values: list[int]) -> float:
    """`standardDeviation` of cpu_assignment.go: the population standard deviation."""
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
