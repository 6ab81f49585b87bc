"""`knuma render | deploy | remove | validate | detect | images`: the deployer's commands.

Thin: flags become `DeployOptions`, one call does the work, results are printed (data on stdout, progress and
errors on stderr). Exit status: 0 success, 1 the cluster refused or is misconfigured, 2 bad flags or input,
3 (validate) the cluster could not be checked.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any

import typer

from knuma.cli import completion
from knuma.cli.errors import FAILURE, fail, unreachable

if TYPE_CHECKING:
    from knuma.deploy.options import Component, DeployOptions, PlatformSpec
    from knuma.kube.apply import Outcome
    from knuma.kube.wait import Readiness

CHECK_ERROR = 3
"""`validate`: the cluster could not be checked (0 and 1 are its verdicts)."""

# Flags shared by render, deploy and remove (names and defaults as the upstream deployer's).
_PLATFORM = typer.Option(
    None, "-P", "--platform", help="kubernetes, openshift or hypershift, optionally :VERSION; default: detected."
)
_SCHEDULER = typer.Option(
    "knuma",
    "--scheduler",
    help="knuma, or upstream (scheduler-plugins' kube-scheduler).",
    autocompletion=completion.choices("knuma", "upstream"),
)
_UPDATER = typer.Option(
    "knuma",
    "--updater-type",
    help="knuma (knuma exporter), RTE or NFD.",
    autocompletion=completion.choices("knuma", "RTE", "NFD"),
)
_REPLICAS = typer.Option(
    1, "-R", "--replicas", help="Scheduler replicas (leader election when > 1); negative: one per control-plane node."
)
_PULL = typer.Option(False, "--pull-if-not-present", help="imagePullPolicy IfNotPresent instead of Always.")
_RTE_CONFIG = typer.Option(None, "--rte-config-file", help="Updater configuration file, put in a ConfigMap.")
_SCORING_FILE = typer.Option(
    None,
    "--sched-scoring-strat-config-file",
    metavar="FILE",
    help="YAML {type, resources: [{name, weight}]}, type LeastAllocated, MostAllocated or BalancedAllocation: the "
    "scheduler's NodeResourceTopologyMatch scoringStrategy.",
)
_CACHE_FILE = typer.Option(
    None,
    "--sched-cache-params-config-file",
    metavar="FILE",
    help="YAML {resyncMethod, foreignPodsDetect, informerMode}: the NodeResourceTopologyMatch cache args, resyncMethod "
    "Autodetect, All or OnlyExclusiveResources, foreignPodsDetect None, All or OnlyExclusiveResources, informerMode "
    "Shared or Dedicated (used by the overreserve cache, which --sched-resync-period > 0 selects).",
)
_PROFILE = typer.Option("topology-aware-scheduler", "--sched-profile-name", help="The scheduler's schedulerName.")
_RESYNC = typer.Option(
    None,
    "--sched-resync-period",
    help="cacheResyncPeriodSeconds; 0 disables the resync. Default: 5s for the upstream scheduler; none for knuma's "
    "(its own NRT cache).",
)
_SCHED_VERBOSE = typer.Option(4, "--sched-verbose", help="Upstream scheduler -v.")
_CTRLPLANE = typer.Option(
    True,
    "--sched-ctrlplane-affinity/--no-sched-ctrlplane-affinity",
    help="Tolerate control-plane taints and prefer control-plane nodes for the scheduler.",
)
_LEASE = typer.Option("", "--sched-leader-elect-resource", help="Leader election Lease, NAMESPACE/NAME or NAME.")
_SYNC = typer.Option("10s", "--updater-sync-period", help="Updater periodic update interval; 0 disables it.")
_PFP = typer.Option(
    True, "--updater-pfp-enable/--no-updater-pfp-enable", help="Publish the pods fingerprint (scheduler cache)."
)
_NOTIF = typer.Option(False, "--updater-notif-enable", help="Updater notify file (event-driven updates).")
_DRA = typer.Option(
    False,
    "--updater-dra-devices",
    help="knuma updater only: publish each NUMA zone's DRA devices (`knuma exporter --dra-devices`), with list and "
    "watch on resourceslices and resourceclaims in its ClusterRole.",
)
_SCC = typer.Option("v2", "--updater-scc", help="OpenShift SecurityContextConstraints version: v1 or v2.")
_UPDATER_VERBOSE = typer.Option(1, "--updater-verbose", help="Upstream updater -v.")
_IMAGE = typer.Option(None, "--image", help="knuma image [env KNUMA_IMAGE].")
_PLUGIN_IMAGE = typer.Option(
    None,
    "--scheduler-plugin-image",
    help="scheduler-plugins' kube-scheduler image, for --scheduler upstream [env TAS_SCHEDULER_PLUGIN_IMAGE].",
)
_RTE_IMAGE = typer.Option(
    None,
    "--rte-image",
    help="resource-topology-exporter image, for --updater-type RTE [env TAS_RESOURCE_EXPORTER_IMAGE].",
)
_NFD_IMAGE = typer.Option(
    None,
    "--nfd-image",
    help="nfd-topology-updater image, for --updater-type NFD [env TAS_NODE_FEATURE_DISCOVERY_IMAGE].",
)
_COMPONENT = typer.Argument(
    None,
    metavar="COMPONENT",
    help="api, updater or scheduler (all when omitted).",
    autocompletion=completion.components,
)
_RENDER_COMPONENT = typer.Argument(
    None,
    metavar="COMPONENT",
    help="api, updater or scheduler (all when omitted), or operator (knuma operator itself).",
    autocompletion=completion.components,
)
_KUBECONFIG = typer.Option(None, "--kubeconfig", help="kubeconfig file (default $KUBECONFIG, ~/.kube/config).")
_CONTEXT = typer.Option(None, "--context", help="kubeconfig context.")
_WAIT = typer.Option(False, "-W", "--wait", help="Wait until the workloads are ready (or gone, for remove).")
_WAIT_TIMEOUT = typer.Option("2m", "-T", "--wait-timeout", help="How long --wait waits.")
_WAIT_INTERVAL = typer.Option("2s", "-E", "--wait-interval", help="How often --wait polls.")
_DRY_RUN = typer.Option(False, "--dry-run", help="Show what would change (server-side dry run) and change nothing.")
_ALL = typer.Option(
    False,
    "--all",
    "--force",
    help="Also delete the NodeResourceTopology CRD while NRT objects exist (by default it is kept, with a warning).",
)


def register(app: typer.Typer) -> None:
    app.command("render")(render)
    app.command("deploy")(deploy)
    app.command("remove")(remove)
    app.command("validate")(validate)
    app.command("detect")(detect)
    app.command("images")(images)


def _file_options(flags: dict[str, Any]) -> dict[str, Any]:
    """The `DeployOptions` fields read from files (`--rte-config-file`, `--sched-scoring-strat-config-file`,
    `--sched-cache-params-config-file`); deploy and remove read them before contacting the cluster, so that a bad
    file fails first, with exit status 2."""
    from knuma.deploy.options import OptionsError
    from knuma.deploy.schedparams import load_cache_params, load_scoring_strategy
    from knuma.manifests import UnreadableFile, read_user_file

    fields: dict[str, Any] = {}
    if flags["rte_config_file"]:
        from knuma.exporter.tmconfig import ConfigError, load_config_file

        try:
            fields["updater_config"] = read_user_file(flags["rte_config_file"])
            checked = load_config_file(flags["rte_config_file"])  # as the exporter will read it from the ConfigMap
        except UnreadableFile as err:
            raise OptionsError(f"cannot read --rte-config-file {err.path}: {err.reason}") from None
        except ConfigError as err:
            raise OptionsError(f"invalid --rte-config-file: {err}") from None
        for warning in checked.warnings:
            typer.echo(f"warning: --rte-config-file {warning}", err=True)
    if flags["sched_scoring_strat_config_file"]:
        fields["scoring_strategy"] = load_scoring_strategy(flags["sched_scoring_strat_config_file"])
    if flags["sched_cache_params_config_file"]:
        fields.update(load_cache_params(flags["sched_cache_params_config_file"]))
    return fields


def _options(platform: PlatformSpec, replicas: int, files: dict[str, Any] | None = None, **flags: Any) -> DeployOptions:
    """`files`: what `_file_options` read (read here when None)."""
    from knuma.deploy.images import resolve_images
    from knuma.deploy.options import (
        DeployOptions,
        OptionsError,
        SchedulerVariant,
        UpdaterType,
        parse_duration,
    )

    scheduler = {v.value.lower(): v for v in SchedulerVariant}.get(flags["scheduler"].lower())
    if scheduler is None:
        raise OptionsError(f"invalid --scheduler {flags['scheduler']!r}: expected knuma or upstream")
    updater = {v.value.lower(): v for v in UpdaterType}.get(flags["updater_type"].lower())
    if updater is None:
        raise OptionsError(f"{flags['updater_type']!r} is invalid updater type: expected knuma, RTE or NFD")
    if flags["updater_dra_devices"] and updater is not UpdaterType.KNUMA:
        raise OptionsError(
            f"--updater-dra-devices needs the knuma updater (--updater-type knuma): {updater.value} does not publish "
            "DRA devices"
        )
    if files is None:
        files = _file_options(flags)
    images = resolve_images(
        {
            "knuma": flags["image"],
            "scheduler_plugin": flags["scheduler_plugin_image"],
            "resource_topology_exporter": flags["rte_image"],
            "node_feature_discovery": flags["nfd_image"],
        }
    )
    return DeployOptions(
        platform=platform,
        scheduler=scheduler,
        updater=updater,
        images=images,
        replicas=replicas,
        pull_if_not_present=flags["pull_if_not_present"],
        profile_name=flags["sched_profile_name"],
        resync_period=(
            parse_duration(flags["sched_resync_period"], "--sched-resync-period")
            if flags["sched_resync_period"] is not None
            else None
        ),
        updater_sync_period=parse_duration(flags["updater_sync_period"], "--updater-sync-period"),
        updater_pfp=flags["updater_pfp_enable"],
        updater_notifications=flags["updater_notif_enable"],
        updater_dra_devices=flags["updater_dra_devices"],
        updater_scc=flags["updater_scc"],
        ctrlplane_affinity=flags["sched_ctrlplane_affinity"],
        leader_elect_resource=flags["sched_leader_elect_resource"],
        updater_verbose=flags["updater_verbose"],
        sched_verbose=flags["sched_verbose"],
        **files,
    )


def _warn_unused_cache_params(options: DeployOptions, flags: dict[str, Any], components: list[Component]) -> None:
    """The `cache` args configure the overreserve cache only; knuma's scheduler without `--sched-resync-period` (its
    own NRT cache) or with 0 (passthrough) renders them but never reads them, which a migrating user would not
    guess from upstream, where the 5 s default always selects overreserve."""
    from knuma.deploy.options import Component

    if not flags["sched_cache_params_config_file"] or Component.SCHEDULER not in components:
        return
    if options.effective_resync_period <= 0:
        typer.echo(
            "warning: --sched-cache-params-config-file: the cache settings apply to the overreserve cache, which "
            "--sched-resync-period > 0 selects; with no --sched-resync-period (knuma's own NRT cache) or 0 "
            "(passthrough) they are rendered but not used",
            err=True,
        )


def _platform_flag(text: str | None) -> PlatformSpec | None:
    from knuma.deploy.options import parse_platform

    if text is None:
        return None
    return parse_platform(text)


def _components(text: str | None, also: str = "") -> list[Component]:
    from knuma.deploy.options import parse_component

    return parse_component(text, also)


def render(
    component: str | None = _RENDER_COMPONENT,
    output: str = typer.Option(
        "yaml",
        "-o",
        "--output",
        help="yaml (a multi-document stream) or json (a v1 List).",
        autocompletion=completion.output_formats("yaml", "json"),
    ),
    platform: str | None = _PLATFORM,
    scheduler: str = _SCHEDULER,
    updater_type: str = _UPDATER,
    replicas: int = _REPLICAS,
    pull_if_not_present: bool = _PULL,
    rte_config_file: str | None = _RTE_CONFIG,
    sched_scoring_strat_config_file: str | None = _SCORING_FILE,
    sched_cache_params_config_file: str | None = _CACHE_FILE,
    sched_profile_name: str = _PROFILE,
    sched_resync_period: str | None = _RESYNC,
    sched_verbose: int = _SCHED_VERBOSE,
    sched_ctrlplane_affinity: bool = _CTRLPLANE,
    sched_leader_elect_resource: str = _LEASE,
    updater_sync_period: str = _SYNC,
    updater_pfp_enable: bool = _PFP,
    updater_notif_enable: bool = _NOTIF,
    updater_dra_devices: bool = _DRA,
    updater_scc: str = _SCC,
    updater_verbose: int = _UPDATER_VERBOSE,
    image: str | None = _IMAGE,
    scheduler_plugin_image: str | None = _PLUGIN_IMAGE,
    rte_image: str | None = _RTE_IMAGE,
    nfd_image: str | None = _NFD_IMAGE,
    conversion_webhook: bool = typer.Option(
        True,
        "--conversion-webhook/--no-conversion-webhook",
        help="operator only: the CRDs convert v1alpha1 through the operator's webhook (a self-signed certificate "
        "made for this render, in a Secret); --no-conversion-webhook keeps strategy None, for clusters that only "
        "ever use v1.",
    ),
) -> None:
    """Print the manifests of the stack (or one component) without touching a cluster, for GitOps."""
    from knuma.deploy.options import PlatformSpec
    from knuma.deploy.render import render as render_objects
    from knuma.deploy.render import to_json, to_yaml

    if output not in ("yaml", "json"):
        fail(f"unknown output format {output!r}; use yaml or json")
    if component == "operator":
        from knuma.deploy.images import resolve_images
        from knuma.operator.render import render_operator

        # the operator with two replicas and leader election unless -R asks for more
        webhook = None
        if conversion_webhook:
            from knuma.operator.render import WebhookTLS, webhook_hosts
            from knuma.serving.certificates import self_signed

            cert = self_signed(webhook_hosts(), common_name="knuma-operator-webhook")
            webhook = WebhookTLS(cert.cert_pem, cert.key_pem)
        objects = render_operator(images=resolve_images({"knuma": image}), replicas=max(2, replicas), webhook=webhook)
        sys.stdout.write(to_json(objects) if output == "json" else to_yaml(objects))
        return
    components = _components(component, also="operator")
    if replicas < 1:
        fail(f"--replicas {replicas}: render needs a positive number (only deploy can count control-plane nodes)")
    flags = {
        k: v
        for k, v in locals().items()
        if k not in ("component", "output", "platform", "replicas", "conversion_webhook")
    }
    options = _options(_platform_flag(platform) or PlatformSpec(), replicas, **flags)
    _warn_unused_cache_params(options, flags, components)
    objects = render_objects(components, options)
    sys.stdout.write(to_json(objects) if output == "json" else to_yaml(objects))


class _Progress:
    """Wait progress on stderr: a live status line on a terminal, a plain line per change otherwise."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.status: Any = None
        self.last: dict[str, str] = {}

    def __call__(self, ref: str, state: Readiness) -> None:
        text = f"{ref}: {state.detail}" + (" ✓" if state.ready else "")
        if self.console.is_terminal:
            if self.status is None:
                self.status = self.console.status(text)
                self.status.start()
            else:
                self.status.update(text)
        elif self.last.get(ref) != state.detail:
            self.console.print(f"waiting: {text}", highlight=False, soft_wrap=True)
        self.last[ref] = state.detail

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()


def _print_outcome(outcome: Outcome, dry_run: bool) -> None:
    suffix = " (dry run)" if dry_run else ""
    typer.echo(f"{outcome.ref} {outcome.change.value}{suffix}")
    for line in outcome.diff:
        typer.echo(f"    {line}")


def _cluster_command(
    action: str,
    component: str | None,
    kubeconfig: str | None,
    context: str | None,
    platform: str | None,
    replicas: int,
    wait: bool,
    wait_timeout: str,
    wait_interval: str,
    dry_run: bool,
    flags: dict[str, Any],
    delete_crd_in_use: bool = False,
) -> None:
    import httpx2

    from knuma.deploy import cluster
    from knuma.deploy.detect import DetectError, detect
    from knuma.deploy.options import parse_duration
    from knuma.kube import errors as kube_errors

    components = _components(component)
    user_platform = _platform_flag(platform)
    timeout = parse_duration(wait_timeout, "--wait-timeout")
    interval = parse_duration(wait_interval, "--wait-interval")
    files = _file_options(flags)
    progress = _Progress()
    try:
        with cluster.connect(kubeconfig, context) as session:
            if user_platform is not None and user_platform.version:
                spec = user_platform
            else:
                spec = detect(session.http, user_platform).effective
                typer.echo(f"platform: {spec}", err=True)
            if replicas < 0:
                replicas = cluster.control_plane_replicas(session.client)
                typer.echo(f"replicas: {replicas} (control-plane nodes)", err=True)
            elif replicas == 0:
                fail("--replicas 0: the scheduler needs at least one replica (negative: one per control-plane node)")
            options = _options(spec, replicas, files, **flags)
            settings = cluster.WaitSettings(wait, timeout, interval or 0.1, progress)
            report = functools.partial(_print_outcome, dry_run=dry_run)
            if action == "deploy":
                _warn_unused_cache_params(options, flags, components)
                cluster.deploy(session, components, options, dry_run=dry_run, wait=settings, report=report)
            else:
                cluster.remove(
                    session,
                    components,
                    options,
                    dry_run=dry_run,
                    wait=settings,
                    report=report,
                    delete_crd_in_use=delete_crd_in_use,
                    warn=lambda message: typer.echo(f"warning: {message}", err=True),
                )
    except cluster.ClusterError as err:
        progress.stop()
        fail(f"{action} failed:\n{err}", FAILURE)
    except (httpx2.HTTPError, kube_errors.Unavailable) as err:
        fail(unreachable(err), FAILURE)
    except (kube_errors.KubeApiError, DetectError) as err:
        fail(f"{action} failed: {err}", FAILURE)
    finally:
        progress.stop()


def deploy(
    component: str | None = _COMPONENT,
    kubeconfig: str | None = _KUBECONFIG,
    context: str | None = _CONTEXT,
    wait: bool = _WAIT,
    wait_timeout: str = _WAIT_TIMEOUT,
    wait_interval: str = _WAIT_INTERVAL,
    dry_run: bool = _DRY_RUN,
    platform: str | None = _PLATFORM,
    scheduler: str = _SCHEDULER,
    updater_type: str = _UPDATER,
    replicas: int = _REPLICAS,
    pull_if_not_present: bool = _PULL,
    rte_config_file: str | None = _RTE_CONFIG,
    sched_scoring_strat_config_file: str | None = _SCORING_FILE,
    sched_cache_params_config_file: str | None = _CACHE_FILE,
    sched_profile_name: str = _PROFILE,
    sched_resync_period: str | None = _RESYNC,
    sched_verbose: int = _SCHED_VERBOSE,
    sched_ctrlplane_affinity: bool = _CTRLPLANE,
    sched_leader_elect_resource: str = _LEASE,
    updater_sync_period: str = _SYNC,
    updater_pfp_enable: bool = _PFP,
    updater_notif_enable: bool = _NOTIF,
    updater_dra_devices: bool = _DRA,
    updater_scc: str = _SCC,
    updater_verbose: int = _UPDATER_VERBOSE,
    image: str | None = _IMAGE,
    scheduler_plugin_image: str | None = _PLUGIN_IMAGE,
    rte_image: str | None = _RTE_IMAGE,
    nfd_image: str | None = _NFD_IMAGE,
) -> None:
    """Apply the stack (or one component) with server-side apply: CRD, then updater, then scheduler. Idempotent."""
    flags = {k: v for k, v in locals().items() if k not in _CLUSTER_PARAMS}
    _cluster_command(
        "deploy", component, kubeconfig, context, platform, replicas, wait, wait_timeout, wait_interval, dry_run, flags
    )


def remove(
    component: str | None = _COMPONENT,
    kubeconfig: str | None = _KUBECONFIG,
    context: str | None = _CONTEXT,
    wait: bool = _WAIT,
    wait_timeout: str = _WAIT_TIMEOUT,
    wait_interval: str = _WAIT_INTERVAL,
    dry_run: bool = _DRY_RUN,
    delete_crd_in_use: bool = _ALL,
    platform: str | None = _PLATFORM,
    scheduler: str = _SCHEDULER,
    updater_type: str = _UPDATER,
    replicas: int = _REPLICAS,
    pull_if_not_present: bool = _PULL,
    rte_config_file: str | None = _RTE_CONFIG,
    sched_scoring_strat_config_file: str | None = _SCORING_FILE,
    sched_cache_params_config_file: str | None = _CACHE_FILE,
    sched_profile_name: str = _PROFILE,
    sched_resync_period: str | None = _RESYNC,
    sched_verbose: int = _SCHED_VERBOSE,
    sched_ctrlplane_affinity: bool = _CTRLPLANE,
    sched_leader_elect_resource: str = _LEASE,
    updater_sync_period: str = _SYNC,
    updater_pfp_enable: bool = _PFP,
    updater_notif_enable: bool = _NOTIF,
    updater_dra_devices: bool = _DRA,
    updater_scc: str = _SCC,
    updater_verbose: int = _UPDATER_VERBOSE,
    image: str | None = _IMAGE,
    scheduler_plugin_image: str | None = _PLUGIN_IMAGE,
    rte_image: str | None = _RTE_IMAGE,
    nfd_image: str | None = _NFD_IMAGE,
) -> None:
    """Delete the stack (or one component) in reverse order; what is already gone is not an error. The
    NodeResourceTopology CRD is kept while NRT objects exist, unless --all."""
    flags = {k: v for k, v in locals().items() if k not in _CLUSTER_PARAMS}
    _cluster_command(
        "remove",
        component,
        kubeconfig,
        context,
        platform,
        replicas,
        wait,
        wait_timeout,
        wait_interval,
        dry_run,
        flags,
        delete_crd_in_use,
    )


_CLUSTER_PARAMS = (
    "component",
    "kubeconfig",
    "context",
    "wait",
    "wait_timeout",
    "wait_interval",
    "dry_run",
    "platform",
    "replicas",
    "delete_crd_in_use",
)


def validate(
    kubeconfig: str | None = _KUBECONFIG,
    context: str | None = _CONTEXT,
    node_selector: str = typer.Option(
        "node-role.kubernetes.io/worker", "-l", "--node-selector", help="Label selector of the nodes to check."
    ),
    topology_manager_policy: str = typer.Option(
        "single-numa-node",
        "--topology-manager-policy",
        help="The Topology Manager policy the nodes must have.",
        autocompletion=completion.policies,
    ),
    output: str = typer.Option(
        "text", "-o", "--output", help="text or json.", autocompletion=completion.output_formats("text", "json")
    ),
    json_flag: bool = typer.Option(False, "-J", "--json", help="Same as -o json (upstream's flag)."),
) -> None:
    """Check that the cluster can run topology-aware scheduling: version, and every worker's kubelet (CPU, memory and
    Topology Manager). Exit status 1 when something is wrong, 3 when the cluster could not be checked."""
    import httpx2

    from knuma.deploy import validate as checks
    from knuma.deploy.detect import DetectError, server_version
    from knuma.kube.client import http_client
    from knuma.kube.configz import ConfigzError, list_node_names, read_configz_many
    from knuma.kube.errors import Unavailable

    if json_flag:
        output = "json"
    if output not in ("text", "json"):
        fail(f"unknown output format {output!r}; use text or json")
    valid_policies = ("none", "best-effort", "restricted", "single-numa-node")
    if topology_manager_policy not in valid_policies:
        choices = ", ".join(valid_policies)
        fail(f"unknown --topology-manager-policy {topology_manager_policy!r}; expected one of {choices}")
    try:
        with http_client(kubeconfig, context, timeout=30) as http:
            issues = checks.check_version(server_version(http))
            nodes = list_node_names(http, node_selector)
            configs = read_configz_many(http, nodes)
    except (ConfigzError, DetectError) as err:
        fail(f"cannot check the cluster: {err}", CHECK_ERROR)
    except (httpx2.HTTPError, Unavailable) as err:
        fail(unreachable(err), CHECK_ERROR)
    if not nodes:
        issues.append(checks.no_worker_nodes(node_selector))
    for node in nodes:
        config = configs[node]
        if isinstance(config, ConfigzError):
            issues.append(checks.unreadable_node(node, str(config)))
        else:
            issues += checks.check_kubelet(node, config, topology_manager_policy)
    if output == "json":
        typer.echo(json.dumps(checks.report_json(issues, nodes), indent=2))
    else:
        typer.echo(f"INFO>>>>: checked {len(nodes)} node(s) matching {node_selector!r}", err=True)
        typer.echo(checks.report_text(issues), nl=False)
    if issues:
        raise typer.Exit(1)


def detect(
    kubeconfig: str | None = _KUBECONFIG,
    context: str | None = _CONTEXT,
    platform: str | None = _PLATFORM,
    output: str = typer.Option(
        "text", "-o", "--output", help="text or json.", autocompletion=completion.output_formats("text", "json")
    ),
    json_flag: bool = typer.Option(False, "-J", "--json", help="Same as -o json (upstream's flag)."),
    control_plane: bool = typer.Option(False, "--control-plane", help="Print the number of control-plane nodes."),
) -> None:
    """Print the cluster's platform and version (`Kubernetes:v1.33.0`); -P overrides what is discovered."""
    import httpx2

    from knuma.deploy.detect import DetectError, control_plane_nodes
    from knuma.deploy.detect import detect as run_detect
    from knuma.kube.client import http_client
    from knuma.kube.errors import KubeApiError, Unavailable

    if json_flag:
        output = "json"
    if output not in ("text", "json"):
        fail(f"unknown output format {output!r}; use text or json")
    user = _platform_flag(platform)
    try:
        with http_client(kubeconfig, context, timeout=30) as http:
            if control_plane:
                count = control_plane_nodes(http)
                typer.echo(json.dumps({"nodeCount": count}) if output == "json" else f"nodes={count}")
                return
            found = run_detect(http, user)
    except Unavailable as err:
        fail(unreachable(err), FAILURE)
    except (DetectError, KubeApiError) as err:
        fail(f"cannot detect the platform: {err}", FAILURE)
    except httpx2.HTTPError as err:
        fail(unreachable(err), FAILURE)
    typer.echo(json.dumps(found.to_json(), indent=2) if output == "json" else str(found.effective))


def images(
    output: str = typer.Option(
        "text",
        "-o",
        "--output",
        help="text (NAME=IMAGE lines) or json.",
        autocompletion=completion.output_formats("text", "json"),
    ),
    raw: bool = typer.Option(False, "-r", "--raw", help="Only the pull specs the selected variants use."),
    scheduler: str = _SCHEDULER,
    updater_type: str = _UPDATER,
    image: str | None = _IMAGE,
    scheduler_plugin_image: str | None = _PLUGIN_IMAGE,
    rte_image: str | None = _RTE_IMAGE,
    nfd_image: str | None = _NFD_IMAGE,
) -> None:
    """List the container images: knuma's one image for all its components, and the upstream variants' images;
    each line is the environment variable that overrides it."""
    from knuma.deploy.images import ENV
    from knuma.deploy.options import PlatformSpec, SchedulerVariant, UpdaterType

    if output not in ("text", "json"):
        fail(f"unknown output format {output!r}; use text or json")
    options = _options(
        PlatformSpec(),
        1,
        scheduler=scheduler,
        updater_type=updater_type,
        image=image,
        scheduler_plugin_image=scheduler_plugin_image,
        rte_image=rte_image,
        nfd_image=nfd_image,
        pull_if_not_present=False,
        rte_config_file=None,
        sched_scoring_strat_config_file=None,
        sched_cache_params_config_file=None,
        sched_profile_name="topology-aware-scheduler",
        sched_resync_period=None,
        updater_sync_period="10s",
        updater_pfp_enable=True,
        updater_notif_enable=False,
        updater_dra_devices=False,
        updater_scc="v2",
        sched_ctrlplane_affinity=True,
        sched_leader_elect_resource="",
        updater_verbose=1,
        sched_verbose=4,
    )
    listed = options.images.items()
    if raw:
        used = {
            "knuma": options.scheduler is SchedulerVariant.KNUMA or options.updater is UpdaterType.KNUMA,
            "scheduler_plugin": options.scheduler is SchedulerVariant.UPSTREAM,
            "resource_topology_exporter": options.updater is UpdaterType.RTE,
            "pause": options.updater is UpdaterType.RTE,
            "node_feature_discovery": options.updater is UpdaterType.NFD,
        }
        specs = [ref for key, ref in listed if used[key]]
        typer.echo(json.dumps(specs) if output == "json" else "\n".join(specs))
    elif output == "json":
        typer.echo(json.dumps(dict(listed), indent=2))
    else:
        typer.echo("\n".join(f"{ENV[key]}={ref}" for key, ref in listed))
