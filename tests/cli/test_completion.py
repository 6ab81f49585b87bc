"""Shell completion of option values through the installed script, as bash asks for it (`complete_bash`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KNUMA = str(Path(sys.executable).with_name("knuma"))


def complete(line: str) -> list[str]:
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {**os.environ, "_KNUMA_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
    done = subprocess.run([KNUMA], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("knuma up --policy ", ["none", "best-effort", "restricted", "single-numa-node"]),
        ("knuma up --scope ", ["container", "pod"]),
        ("knuma up --shape four", ["four-numa"]),
        ("knuma up --exporters in", ["in-process"]),
        ("knuma deploy ", ["api", "updater", "scheduler"]),
        ("knuma remove up", ["updater"]),
        ("knuma schedule -o y", ["yaml"]),
        ("knuma simulate -o ", ["table", "json", "yaml"]),
        ("knuma simulate --scenario frag", ["fragmented"]),
        ("knuma bench -o ", ["table", "wide", "json"]),
        ("knuma check -o w", ["wide"]),
        ("knuma claims schedule -o ", ["table", "json", "yaml"]),
        ("knuma render -o j", ["json"]),
        ("knuma validate --topology-manager-policy re", ["restricted"]),
        ("knuma deploy --updater-type ", ["knuma", "RTE", "NFD"]),
        ("knuma deploy --scheduler up", ["upstream"]),
        ("knuma exporter --topology-manager-scope ", ["container", "pod"]),
        ("knuma exporter --metrics-mode http", ["http", "httptls"]),
        ("knuma e2e --deploy m", ["missing"]),
    ],
)
def test_values_are_completed(line: str, expected: list[str]) -> None:
    assert complete(line) == expected


def test_scheduler_lists_complete_their_last_item() -> None:
    offered = complete("knuma simulate --schedulers default,knuma,nrt-o")
    assert offered == ["default,knuma,nrt-overreserve"]
    assert "default,default" not in " ".join(complete("knuma simulate --schedulers default,"))
