"""`knuma.scheduler.daemon.run.daemon_settings`: the configuration file, with command-line flags taking precedence."""

from __future__ import annotations

import dataclasses

from knuma.scheduler.config.load import load_config
from knuma.scheduler.daemon.run import CommandLine, daemon_settings


def test_the_configuration_file_gives_the_defaults() -> None:
    configuration = load_config(None, log_warnings=False)
    settings = daemon_settings(configuration, CommandLine())
    election = configuration.leader_election
    assert settings.leader_elect is election.leader_elect
    assert (settings.lease.namespace, settings.lease.name) == (election.resource_namespace, election.resource_name)
    assert settings.initial_backoff == configuration.pod_initial_backoff_seconds
    assert settings.max_backoff == configuration.pod_max_backoff_seconds
    assert not settings.explain


def test_flags_take_precedence_over_the_file() -> None:
    configuration = load_config(None, log_warnings=False)
    configuration = dataclasses.replace(
        configuration, leader_election=dataclasses.replace(configuration.leader_election, leader_elect=True)
    )
    flags = CommandLine(leader_elect=False, lease_namespace="knuma", lease_name="me", explain=True)
    settings = daemon_settings(configuration, flags)
    assert settings.leader_elect is False
    assert (settings.lease.namespace, settings.lease.name) == ("knuma", "me")
    assert settings.explain
