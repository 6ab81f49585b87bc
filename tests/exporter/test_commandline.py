"""`knuma.exporter.commandline`: the exporter's flags as values, checked, and turned into settings."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from knuma.cli.exporter import exporter
from knuma.errors import InvalidInput
from knuma.exporter.commandline import CommandLine, settings_from


def test_every_flag_of_the_command_is_a_field() -> None:
    """The CLI passes its parameters by name: a flag without a field would be silently dropped (the logging flags
    configure logging before the command line is built; CONFIGROOT and --dump-config say which files set the fields
    and where the result is printed)."""
    flags = set(inspect.signature(exporter).parameters) - {"verbose", "log_level", "ctx", "config_root", "dump_config"}
    assert flags == {field.name for field in dataclasses.fields(CommandLine)}


def test_durations_and_names_become_settings() -> None:
    command = CommandLine(node_name="n1", sleep_interval="1m30s", reference_container="ns/pod/c", metrics_port=0)
    settings = settings_from(command)
    assert settings.node_name == "n1"
    assert settings.sleep_interval == 90.0
    assert settings.reference_container == ("ns", "pod", "c")
    assert settings.metrics_port is None  # 0 turns the endpoints off
    assert settings_from(CommandLine(node_name="n1", sleep_interval="45")).sleep_interval == 45.0
    assert settings.patch_resync == 10  # RTE's --patch-resync default
    assert settings_from(CommandLine(node_name="n1", patch_resync=0)).patch_resync == 0


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        (CommandLine(output="xml"), "unknown output format 'xml'"),
        (CommandLine(no_podresources=True), "only makes sense with --dry-run"),
        (CommandLine(metrics_mode="https"), "unknown --metrics-mode 'https'"),
        (CommandLine(no_podresources=True, dry_run=True, exclude_terminal_pods=True), "does nothing"),
        (CommandLine(metrics_want_cli_auth=True), "--metrics-want-cli-auth needs --metrics-mode=httptls"),
        (CommandLine(metrics_client_ca_file="ca.crt"), "--metrics-client-ca-file needs --metrics-mode=httptls"),
        (CommandLine(metrics_mode="httptls", metrics_client_ca_file="ca.crt"), "needs --metrics-want-cli-auth"),
        (CommandLine(patch_resync=-1), "--patch-resync must be 0 "),
    ],
)
def test_combinations_that_cannot_work_are_refused(command: CommandLine, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        command.check()


def test_a_dry_run_needs_once_and_a_bad_interval_names_its_flag() -> None:
    with pytest.raises(InvalidInput, match="--dry-run needs --once"):
        CommandLine(dry_run=True).check_dry_run()
    with pytest.raises(InvalidInput, match="invalid --sleep-interval 'soon'"):
        settings_from(CommandLine(node_name="n", sleep_interval="soon"))
