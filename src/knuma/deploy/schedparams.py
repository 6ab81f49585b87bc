"""The upstream deployer's scheduler parameter files: `--sched-scoring-strat-config-file` (NodeResourceTopologyMatch
`scoringStrategy`) and `--sched-cache-params-config-file` (its `cache`).

The files are what upstream's deployer reads (`pkg/manifests/schedparams.go`: `ScoringStrategyParams`,
`ConfigCacheParams`; `pkg/commands/root.go`: `PostSetupOptions`), with the same keys and the same accepted values, so
that scripts written for it keep working. Upstream unmarshals them leniently (an unknown key or a misspelled weight
is dropped, an unknown value only fails inside the scheduler's pod); here every problem is an `OptionsError` that
names the flag, the file, the key and what is accepted, before anything is rendered or applied.

The checks are the scheduler's own (`knuma.scheduler.plugins.numa_args`: the same enums and the same wording as
`knuma scheduler --check-config`); the scoring types are upstream's three (`knuma.api.numaresources.ScoringType`),
not knuma's additional strategies, which upstream's scheduler would reject.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from knuma.api.numaresources import ScoringType
from knuma.deploy.options import OptionsError
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_documents
from knuma.scheduler.plugins.args_fields import Fail, field_enum, field_mapping, quoted
from knuma.scheduler.plugins.numa_args import FOREIGN_PODS_DETECT, INFORMER_MODES, RESYNC_METHODS

__all__ = ["CACHE_FLAG", "SCORING_FLAG", "load_cache_params", "load_scoring_strategy"]

SCORING_FLAG = "--sched-scoring-strat-config-file"
CACHE_FLAG = "--sched-cache-params-config-file"

_SCORING_KEYS = ("type", "resources")
_RESOURCE_KEYS = ("name", "weight")
#: File key -> (the `DeployOptions` field it sets, the accepted values).
_CACHE_KEYS: Mapping[str, tuple[str, Sequence[str]]] = {
    "resyncMethod": ("resync_method", RESYNC_METHODS),
    "foreignPodsDetect": ("foreign_pods_detect", FOREIGN_PODS_DETECT),
    "informerMode": ("informer_mode", INFORMER_MODES),
}

ScoringStrategy = tuple[str, tuple[tuple[str, int], ...]]
"""`DeployOptions.scoring_strategy`: the type and the (resource, weight) pairs."""


def load_scoring_strategy(path: str | Path) -> ScoringStrategy:
    """`{type, resources: [{name, weight}]}`. `type` is required (upstream's scheduler rejects a strategy without
    one); `resources` may be omitted (the scheduler's default, cpu and memory); a missing or 0 `weight` is 1, as the
    scheduler defaults it; a negative one is refused."""
    fail = _failer(SCORING_FLAG, path)
    document = _read(path, fail)
    if document is None:
        fail("", f"the file is empty; expected a mapping with {' and '.join(_SCORING_KEYS)}")
    data = _top_level(document, _SCORING_KEYS, fail)
    types = [t.value for t in ScoringType]
    if data.get("type") is None:
        fail("type", f"required; expected one of {', '.join(types)}")
    kind = field_enum(data["type"], "type", types, "", fail)
    listed = data.get("resources")
    if listed is None:
        return kind, ()
    if not isinstance(listed, list):
        fail("resources", f"must be a list of {{name, weight}}, got {type(listed).__name__}")
    resources: list[tuple[str, int]] = []
    for index, item in enumerate(listed):
        where = f"resources[{index}]"
        if item is None:
            fail(where, "must be a mapping of name and weight, got an empty item")
        entry = field_mapping(item, where, _RESOURCE_KEYS, fail)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            problem = "required" if name is None else f"must be a resource name, got {quoted(name)}"
            fail(f"{where}.name", f"{problem}; a resource name such as cpu, memory or hugepages-1Gi")
        if name in dict(resources):
            fail(f"{where}.name", f"{quoted(name)} is listed twice; give each resource one weight")
        weight = entry.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            fail(f"{where}.weight", f"must be a positive integer (0 or none: 1), got {quoted(weight)}")
        resources.append((name, weight or 1))  # the scheduler's defaulting, as upstream's deployer leaves it to
    return kind, tuple(resources)


def load_cache_params(path: str | Path) -> dict[str, str]:
    """`{resyncMethod, foreignPodsDetect, informerMode}`, each optional: the `DeployOptions` fields the file sets
    (`resync_method`, `foreign_pods_detect`, `informer_mode`). What it leaves out keeps upstream's default
    (`SetDefaultsConfigCacheParams`: Autodetect, OnlyExclusiveResources, no informerMode), which `DeployOptions`
    holds; an empty file changes nothing."""
    fail = _failer(CACHE_FLAG, path)
    document = _read(path, fail)
    if document is None:
        return {}
    data = _top_level(document, tuple(_CACHE_KEYS), fail)
    fields: dict[str, str] = {}
    for key, value in data.items():
        field, choices = _CACHE_KEYS[key]
        if value is None:
            fail(key, f"empty; expected one of {', '.join(choices)}, or leave the key out")
        fields[field] = field_enum(value, key, choices, "", fail)
    return fields


def _failer(flag: str, path: str | Path) -> Fail:
    """`fail(key path, problem)` for one file: `--FLAG FILE: KEY: PROBLEM` (no key for the whole file)."""

    def fail(where: str, problem: str) -> NoReturn:
        key = where.lstrip(".")
        raise OptionsError(f"{flag} {path}: {key + ': ' if key else ''}{problem}")

    return fail


def _read(path: str | Path, fail: Fail) -> Any:
    """The file's one YAML document (None when empty)."""
    try:
        text = read_user_file(path)
    except UnreadableFile as err:
        fail("", err.problem)
    try:
        documents = yaml_documents(text)
    except YamlProblem as err:
        fail("", str(err))
    if len(documents) > 1:
        fail("", f"holds {len(documents)} YAML documents; expected one mapping")
    return documents[0] if documents else None


def _top_level(document: Any, keys: Sequence[str], fail: Fail) -> Mapping[str, Any]:
    if not isinstance(document, Mapping):
        fail("", f"expected a mapping with the keys {', '.join(keys)}, got {type(document).__name__}")
    return field_mapping(document, "", keys, fail)
