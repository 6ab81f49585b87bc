"""The installed `knuma` console script: every command's help works, and start-up imports no heavy dependency.

Every `knuma` invocation imports every `knuma.cli.*` module (typer needs each command's signature), including
`knuma exporter` on every node, whose memory budget is 60 MB. So a command module imports only typer (and the
standard library) at the top, and its heavy dependencies inside the command function.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from knuma.cli.main import app

KNUMA = Path(sys.executable).with_name("knuma")

HEAVY = (
    "aiohttp",
    "google.protobuf",
    "grpc",
    "h2",
    "httpx2",
    "kopf",
    "lightkube",
    "matplotlib",
    "numpy",
    "ortools",
    "pandas",
    "prometheus_client",
)
"""Packages that `import knuma.cli.main` must not load; a command imports them when it runs."""


def commands() -> list[str]:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    names += [g.name or "" for g in app.registered_groups]
    return sorted(n for n in names if n)


def test_every_command_is_discovered() -> None:
    assert {"apiserver", "bench", "exporter", "schedule", "simulate", "version"} <= set(commands())


def test_help_of_every_command_through_the_console_script() -> None:
    """`knuma --help` and `knuma COMMAND --help` for every registered command, run in parallel."""
    runs = {name: [str(KNUMA), name, "--help"] for name in commands()}
    runs[""] = [str(KNUMA), "--help"]
    procs = {
        name: subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, args in runs.items()
    }
    failures = []
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        if proc.returncode != 0 or "Usage:" not in out:
            failures.append(f"knuma {name} --help: exit {proc.returncode}\n{out}\n{err}")
        elif name and f"knuma {name}" not in out:
            failures.append(f"knuma {name} --help does not show its usage line:\n{out}")
    assert not failures, "\n\n".join(failures)
    listing = subprocess.run([str(KNUMA), "--help"], capture_output=True, text=True, timeout=60).stdout
    for name in commands():
        assert name in listing


def test_start_up_imports_no_heavy_dependency() -> None:
    code = (
        "import sys, knuma.cli.main\n"
        f"heavy = {HEAVY!r}\n"
        "loaded = sorted(h for h in heavy if h in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = done.stdout.strip()
    assert not loaded, (
        f"`import knuma.cli.main` loads {loaded}: import them inside the command function (see this module's docstring)"
    )


def test_python_m_knuma_cli_exporter_is_knuma_exporter() -> None:
    """Older manifests run `python -m knuma.cli.exporter ARGS`; it must stay the same command."""
    done = subprocess.run(
        [sys.executable, "-m", "knuma.cli.exporter", "--once", "--dry-run", "-o", "xml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown output format 'xml'" in done.stderr
    usage = subprocess.run([sys.executable, "-m", "knuma.cli.exporter", "--help"], capture_output=True, text=True)
    assert "knuma exporter" in usage.stdout


def test_version_and_short_help_on_every_command() -> None:
    """`--version` answers the same everywhere (also after a command, as `knuma up --version`), and `-h` is `--help`."""
    from typer.testing import CliRunner

    from knuma import __version__

    runner = CliRunner()
    for name in ["", *commands()]:
        args = [name] if name else []
        version = runner.invoke(app, [*args, "--version"])
        assert version.exit_code == 0, f"knuma {name} --version: {version.output}"
        assert version.output.strip() == __version__, f"knuma {name} --version printed {version.output!r}"
        short = runner.invoke(app, [*args, "-h"])
        assert short.exit_code == 0, f"knuma {name} -h: {short.output}"
        assert "Usage:" in short.output


def test_version_through_the_console_scripts() -> None:
    from knuma import __version__

    for script in ("knuma", "kubectl-numa"):
        done = subprocess.run([str(KNUMA.with_name(script)), "--version"], capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout.strip()) == (0, __version__)


def test_help_text_has_no_hard_line_breaks_mid_paragraph() -> None:
    """Every command's help is reflowed from its docstring: the terminal wraps it, not the source's line ends."""
    from knuma.cli.main import _reflow

    assert _reflow("One sentence\nwrapped in the source.\n\n    an example\n    kept as is") == (
        "One sentence wrapped in the source.\n\n    an example\n    kept as is"
    )
    for info in app.registered_commands:
        assert info.help, info.callback
        first = info.help.split("\n\n")[0]
        assert "\n" not in first, f"{info.name}: {first!r}"


def test_every_command_takes_verbose_and_log_level() -> None:
    """`-v` and `--log-level` everywhere, the daemons' own included, with one error for a bad level."""
    from typer.testing import CliRunner

    runner = CliRunner()
    for name in commands():
        shown = runner.invoke(app, [name, "-h"], env={"COLUMNS": "200"})
        assert "--log-level" in shown.output and "-v" in shown.output, f"knuma {name} -h:\n{shown.output}"
    for args in (["render", "api"], ["scheduler"], ["up"], ["exporter"], ["operator"], ["apiserver"]):
        bad = runner.invoke(app, [*args, "--log-level", "loud"])
        assert bad.exit_code == 2, (args, bad.output)
        assert "unknown --log-level 'loud'; use debug, info, warning or error" in bad.output, (args, bad.output)


def test_help_at_80_columns_never_breaks_a_hyphenated_word() -> None:
    """Option names and upstream names (`kube-scheduler`, `--sched-resync-period`) stay whole when help wraps: a line
    never ends inside a word at one of its hyphens (it did for `kube-` / `scheduler` in `knuma deploy -h`)."""
    import itertools
    import re

    from typer.testing import CliRunner

    runner = CliRunner()
    broken = []
    for args in ([], *([name] for name in commands()), ["claims", "schedule"]):
        shown = runner.invoke(app, [*args, "-h"], env={"COLUMNS": "80"})
        assert shown.exit_code == 0, (args, shown.output)
        lines = shown.output.splitlines()
        for line, following in itertools.pairwise(lines):
            if re.search(r"\w-$", line) and re.match(r"\s*\w", following):
                broken.append(f"knuma {' '.join(args)} -h: {line.strip()!r} / {following.strip()!r}")
    assert not broken, "\n".join(broken)


def test_help_names_values_not_python_types() -> None:
    """A repeatable option shows what to give (`--nodes FILE`), not typer's `<list[Path]>`; a long `A|B|C` run is
    not cut mid-word by the wrap (`...|Bal` / `ancedAllocation` in `knuma render -h`); arguments are upper-case."""
    import re

    from typer.testing import CliRunner

    runner = CliRunner()
    bad = []
    for args in ([], *([name] for name in commands()), ["claims", "schedule"], ["claims", "allocate"]):
        shown = runner.invoke(app, [*args, "-h"], env={"COLUMNS": "80"})
        assert shown.exit_code == 0, (args, shown.output)
        bad += [
            f"knuma {' '.join(args)} -h: {line.strip()!r}" for line in shown.output.splitlines() if "<list[" in line
        ]
        bad += [
            f"knuma {' '.join(args)} -h: {line.strip()!r}"
            for line in shown.output.splitlines()
            if re.search(r"\|\w+$", line)
        ]
    assert not bad, "\n".join(bad)
    schedule_help = runner.invoke(app, ["schedule", "-h"], env={"COLUMNS": "80"}).output
    assert "--pod FILE" in schedule_help and "--nodes FILE" in schedule_help
    assert "Usage: knuma gather [OPTIONS] {DIR}" in runner.invoke(app, ["gather", "-h"]).output
    deploy_help = runner.invoke(app, ["deploy", "-h"], env={"COLUMNS": "200"}).output
    assert "Usage: knuma deploy [OPTIONS] [COMPONENT]" in deploy_help
    assert "operator" not in deploy_help.split("Options:")[0]  # only render takes it
    assert "or operator" in runner.invoke(app, ["render", "-h"], env={"COLUMNS": "200"}).output
    assert re.search(r"--rte-image \S+\s+resource-topology-exporter image", deploy_help)  # not only its variable
