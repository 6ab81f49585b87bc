"""`--sched-scoring-strat-config-file` and `--sched-cache-params-config-file`: the upstream deployer's scheduler
parameter files, through the real CLI. What they render is read back by `knuma scheduler`'s own configuration loader;
every kind of bad file is exit status 2 with a message naming the flag, the file, the key and what is accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client, KubeConfig
from lightkube.resources.core_v1 import ConfigMap
from typer.testing import CliRunner

from knuma.cli.main import app
from knuma.deploy.scheduler import CONFIG_KEY
from knuma.scheduler.cache.overreserve import OverReserve
from knuma.scheduler.config.load import build_nrt_cache, default_config, load_config
from knuma.scheduler.config.model import SchedulerConfiguration
from knuma.testing.apiserver import RunningApiServer

SCORING = "--sched-scoring-strat-config-file"
CACHE = "--sched-cache-params-config-file"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def rendered(*args: str) -> dict[str, Any]:
    """The NodeResourceTopologyMatch args of `knuma render scheduler ARGS`."""
    result = invoke("render", "scheduler", *args)
    assert result.exit_code == 0, result.output
    return _args(_config_text(list(yaml.safe_load_all(result.stdout))))


def _config_text(objects: list[dict[str, Any]]) -> str:
    return str(next(o for o in objects if o["kind"] == "ConfigMap")["data"][CONFIG_KEY])


def _args(text: str) -> dict[str, Any]:
    config = yaml.safe_load(text)
    (plugin,) = config["profiles"][0]["pluginConfig"]
    assert plugin["name"] == "NodeResourceTopologyMatch"
    return dict(plugin["args"])


def loaded(tmp_path: Path, *args: str) -> SchedulerConfiguration:
    """`knuma render scheduler ARGS`'s configuration, read from a file by the loader `knuma scheduler --config` uses."""
    result = invoke("render", "scheduler", *args)
    assert result.exit_code == 0, result.output
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(_config_text(list(yaml.safe_load_all(result.stdout))))
    config = load_config(path)
    assert not config.warnings
    return config


@pytest.mark.parametrize("scheduler", ["knuma", "upstream"])
def test_scoring_strategy_file_becomes_the_scoring_strategy(tmp_path: Path, scheduler: str) -> None:
    text = "type: MostAllocated\nresources:\n- {name: cpu, weight: 3}\n- {name: memory, weight: 0}\n"
    scoring = write(tmp_path, "scoring.yaml", text)
    args = rendered("--scheduler", scheduler, SCORING, scoring)
    assert args["scoringStrategy"] == {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
    }
    numa = loaded(tmp_path, "--scheduler", scheduler, SCORING, scoring).profiles[0].numa
    assert numa is not None
    assert (numa.scoring_type.value, numa.resources) == ("MostAllocated", (("cpu", 3), ("memory", 1)))


@pytest.mark.parametrize("kind", ["LeastAllocated", "BalancedAllocation"])
def test_scoring_strategy_without_resources_keeps_the_schedulers_default_weights(tmp_path: Path, kind: str) -> None:
    scoring = write(tmp_path, "scoring.yaml", f"type: {kind}\n")
    assert rendered(SCORING, scoring)["scoringStrategy"] == {"type": kind}
    numa = loaded(tmp_path, SCORING, scoring).profiles[0].numa
    assert numa is not None and (numa.scoring_type.value, numa.resources) == (kind, (("cpu", 1), ("memory", 1)))


def test_no_scoring_file_renders_knumas_profile_and_upstreams_for_the_upstream_image(tmp_path: Path) -> None:
    """Without a strategy file the knuma variant deploys the profile `knuma scheduler` runs without a file (and the
    simulator measures): KnumaBinPacking, NodeResourcesBalancedAllocation not scoring. scheduler-plugins' image
    knows neither: its variant gets no key, upstream's default."""
    assert rendered()["scoringStrategy"] == {"type": "KnumaBinPacking"}
    (profile,) = loaded(tmp_path).profiles
    (built_in,) = default_config().profiles
    assert (profile.numa.scoring_type, profile.numa.resources) == (built_in.numa.scoring_type, built_in.numa.resources)
    assert "NodeResourcesBalancedAllocation" not in profile.plugins["score"]
    assert [n for n, _ in profile.scorers] == [n for n, _ in built_in.scorers]
    assert "scoringStrategy" not in rendered("--scheduler", "upstream")
    scoring = write(tmp_path, "scoring.yaml", "type: LeastAllocated\n")
    chosen = loaded(tmp_path, SCORING, scoring).profiles[0]
    assert "NodeResourcesBalancedAllocation" in chosen.plugins["score"]  # a chosen strategy gets upstream's scores


def test_cache_params_file_becomes_the_cache_args_of_the_overreserve_cache(tmp_path: Path) -> None:
    cache = write(tmp_path, "cache.yaml", "resyncMethod: All\nforeignPodsDetect: None\ninformerMode: Shared\n")
    args = rendered(CACHE, cache, "--sched-resync-period", "10s")
    assert args["cache"] == {"resyncMethod": "All", "foreignPodsDetect": "None", "informerMode": "Shared"}
    assert args["cacheResyncPeriodSeconds"] == 10
    config = loaded(tmp_path, CACHE, cache, "--sched-resync-period", "10s")
    numa = config.profiles[0].numa
    assert numa is not None and numa.cache_mode == "overreserve"
    assert (numa.resync_method, numa.foreign_pods_detect, numa.informer_mode) == ("All", "None", "Shared")
    built = build_nrt_cache(config)
    assert isinstance(built, OverReserve)
    assert (built.resync_method, built.foreign_pods_detect, built.informer_mode) == ("All", "None", "Shared")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"resyncMethod": "Autodetect", "foreignPodsDetect": "OnlyExclusiveResources"}),
        ("informerMode: Dedicated\n", {"resyncMethod": "Autodetect", "foreignPodsDetect": "OnlyExclusiveResources",
                                       "informerMode": "Dedicated"}),
        ("resyncMethod: OnlyExclusiveResources\n", {"resyncMethod": "OnlyExclusiveResources",
                                                    "foreignPodsDetect": "OnlyExclusiveResources"}),
        # upstream's hack/cacheparams.yaml
        ("foreignPodsDetect: OnlyExclusiveResources\nresyncMethod: Autodetect\ninformerMode: Dedicated\n",
         {"resyncMethod": "Autodetect", "foreignPodsDetect": "OnlyExclusiveResources", "informerMode": "Dedicated"}),
    ],
)  # fmt: skip
def test_what_the_cache_file_leaves_out_keeps_upstreams_defaults(
    tmp_path: Path, text: str, expected: dict[str, str]
) -> None:
    """Upstream's SetDefaultsConfigCacheParams: Autodetect, OnlyExclusiveResources, no informerMode."""
    assert rendered(CACHE, write(tmp_path, "cache.yaml", text))["cache"] == expected
    assert rendered()["cache"] == {"resyncMethod": "Autodetect", "foreignPodsDetect": "OnlyExclusiveResources"}


@pytest.mark.parametrize(
    ("args", "warned"),
    [
        ((), True),
        (("--sched-resync-period", "0"), True),
        (("--sched-resync-period", "5s"), False),
        (("--scheduler", "upstream"), False),
    ],
)
def test_cache_params_without_the_overreserve_cache_are_rendered_with_a_warning(
    tmp_path: Path, args: tuple[str, ...], warned: bool
) -> None:
    """knuma's own cache (no --sched-resync-period) and passthrough (0) do not read `cache`; upstream's scheduler gets
    overreserve by default (5 s)."""
    cache = write(tmp_path, "cache.yaml", "informerMode: Shared\n")
    result = invoke("render", "scheduler", CACHE, cache, *args)
    assert result.exit_code == 0, result.output
    assert _args(_config_text(list(yaml.safe_load_all(result.stdout))))["cache"]["informerMode"] == "Shared"
    assert (
        "warning: --sched-cache-params-config-file: the cache settings apply to the overreserve cache" in result.stderr
    ) is warned
    assert "warning" not in invoke("render", "updater", CACHE, cache, *args).stderr


TYPES = "expected one of MostAllocated, BalancedAllocation, LeastAllocated"
RESYNC = "expected one of Autodetect, All, OnlyExclusiveResources"
FOREIGN = "expected one of None, All, OnlyExclusiveResources"
INFORMER = "expected one of Shared, Dedicated"


@pytest.mark.parametrize(
    ("flag", "text", "message"),
    [
        (SCORING, "type: [MostAllocated\n", "malformed YAML at line 2, column 1: expected ',' or ']'"),
        (SCORING, "type: A\n---\ntype: B\n", "holds 2 YAML documents; expected one mapping"),
        (SCORING, "- type: MostAllocated\n", "expected a mapping with the keys type, resources, got list"),
        (SCORING, "MostAllocated\n", "expected a mapping with the keys type, resources, got str"),
        (SCORING, "", "the file is empty; expected a mapping with type and resources"),
        (SCORING, "type: MostAllocated\nweights: []\n", "weights: unknown field; expected one of type, resources"),
        (SCORING, "resources: [{name: cpu, weight: 1}]\n", f"type: required; {TYPES}"),
        (SCORING, "type: mostallocated\n", f'type: unknown value "mostallocated"; {TYPES}'),
        (SCORING, "type: LeastNUMANodes\n", f'type: unknown value "LeastNUMANodes"; {TYPES}'),
        (SCORING, "type: MostAllocated\nresources: {cpu: 1}\n",
         "resources: must be a list of {name, weight}, got dict"),
        (SCORING, "type: MostAllocated\nresources: [cpu]\n", "resources[0]: must be a mapping, got str"),
        (SCORING, "type: MostAllocated\nresources: [{weight: 2}]\n",
         "resources[0].name: required; a resource name such as cpu, memory or hugepages-1Gi"),
        (SCORING, "type: MostAllocated\nresources: [{name: '', weight: 2}]\n",
         'resources[0].name: must be a resource name, got ""; a resource name such as cpu'),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu, wieght: 2}]\n",
         "resources[0].wieght: unknown field; expected one of name, weight"),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu}, {name: memory, weight: -2}]\n",
         "resources[1].weight: must be a positive integer (0 or none: 1), got -2"),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu, weight: 1.5}]\n",
         "resources[0].weight: must be a positive integer (0 or none: 1), got 1.5"),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu, weight: two}]\n",
         'resources[0].weight: must be a positive integer (0 or none: 1), got "two"'),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu, weight: true}]\n",
         "resources[0].weight: must be a positive integer (0 or none: 1), got True"),
        (SCORING, "type: MostAllocated\nresources: [{name: cpu}, {name: cpu, weight: 2}]\n",
         'resources[1].name: "cpu" is listed twice'),
        (CACHE, "resyncMethod: Sometimes\n", f'resyncMethod: unknown value "Sometimes"; {RESYNC}'),
        (CACHE, "foreignPodsDetect: Exclusive\n", f'foreignPodsDetect: unknown value "Exclusive"; {FOREIGN}'),
        (CACHE, "informerMode: shared\n", f'informerMode: unknown value "shared"; {INFORMER}'),
        (CACHE, "informerMode:\n", f"informerMode: empty; {INFORMER}, or leave the key out"),
        (CACHE, "foreignPodsDetectMode: All\n",
         "foreignPodsDetectMode: unknown field; expected one of resyncMethod, foreignPodsDetect, informerMode"),
        (CACHE, "[All]\n", "expected a mapping with the keys resyncMethod, foreignPodsDetect, informerMode, got list"),
        (CACHE, "resyncMethod: 'All\n", "malformed YAML"),
    ],
)  # fmt: skip
def test_a_bad_file_is_exit_2_naming_the_flag_the_file_the_key_and_the_accepted_values(
    tmp_path: Path, flag: str, text: str, message: str
) -> None:
    path = write(tmp_path, "params.yaml", text)
    result = invoke("render", flag, path)
    assert result.exit_code == 2, result.output
    assert f"error: {flag} {path}: {message}" in result.output
    assert result.stdout == ""


@pytest.mark.parametrize("flag", [SCORING, CACHE])
def test_a_missing_or_unreadable_file_is_exit_2(tmp_path: Path, flag: str) -> None:
    missing = invoke("render", flag, str(tmp_path / "nope.yaml"))
    assert missing.exit_code == 2 and f"error: {flag} {tmp_path / 'nope.yaml'}: no such file" in missing.output
    directory = invoke("render", flag, str(tmp_path))
    assert directory.exit_code == 2 and f"error: {flag} {tmp_path}: cannot read: " in directory.output
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00type")
    undecodable = invoke("render", flag, str(binary))
    assert undecodable.exit_code == 2 and f"error: {flag} {binary}: cannot read: " in undecodable.output


@pytest.mark.parametrize("command", ["deploy", "remove"])
def test_deploy_and_remove_check_the_files_before_contacting_the_cluster(tmp_path: Path, command: str) -> None:
    """The kubeconfig does not exist: the file's error comes first, with the usage exit status."""
    bad = write(tmp_path, "scoring.yaml", "type: Fastest\n")
    result = invoke(command, "--kubeconfig", str(tmp_path / "no-kubeconfig"), SCORING, bad)
    assert result.exit_code == 2, result.output
    assert f'error: {SCORING} {bad}: type: unknown value "Fastest"' in result.output


def test_deploy_applies_both_files(api: RunningApiServer, tmp_path: Path) -> None:
    scoring = write(tmp_path, "scoring.yaml", "type: BalancedAllocation\nresources: [{name: cpu, weight: 2}]\n")
    cache = write(tmp_path, "cache.yaml", "resyncMethod: OnlyExclusiveResources\ninformerMode: Shared\n")
    kubeconfig = ["--kubeconfig", str(api.kubeconfig)]
    result = invoke("deploy", *kubeconfig, "scheduler", SCORING, scoring, CACHE, cache, "--sched-resync-period", "5s")
    assert result.exit_code == 0, result.output
    with Client(KubeConfig.from_file(api.kubeconfig), trust_env=False) as client:
        text = client.get(ConfigMap, "scheduler-config", namespace="tas-scheduler").data[CONFIG_KEY]  # type: ignore[index]
    args = _args(text)
    assert args["scoringStrategy"] == {"type": "BalancedAllocation", "resources": [{"name": "cpu", "weight": 2}]}
    assert args["cache"] == {
        "resyncMethod": "OnlyExclusiveResources",
        "foreignPodsDetect": "OnlyExclusiveResources",
        "informerMode": "Shared",
    }
    path = tmp_path / "applied.yaml"
    path.write_text(text)
    numa = load_config(path).profiles[0].numa
    assert numa is not None and numa.scoring_type.value == "BalancedAllocation"
    assert (numa.resync_method, numa.informer_mode) == ("OnlyExclusiveResources", "Shared")
