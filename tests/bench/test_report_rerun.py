"""`python -m knuma.bench.report --only SECTION`: one section run again, in place, the rest of the report kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knuma.bench import report


def _first() -> str:
    return "## First\n\nnew figures"


def _second() -> str:
    return "## Second\n\nsecond figures"


def test_one_section_is_replaced_in_place_and_a_new_one_appended(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(report, "SECTIONS", [_first, _second])
    existing = "# Benchmarks\n\nheader\n\n## First\n\nold figures\n\n## Other\n\nkept\n"
    output = tmp_path / "benchmarks.md"
    output.write_text(existing)
    report.main(["--output", str(output), "--only", "_first"])
    text = output.read_text()
    assert "old figures" not in text and "new figures" in text
    assert text.index("## First") < text.index("## Other") and "kept" in text and "header" in text
    assert "This section alone: " in text and "`python -m knuma.bench.report --only _first`" in text
    speed = re.search(r"Python speed (\d+\.\d\d) s", text)
    assert speed is not None and 0 < float(speed.group(1)) < 60
    report.main(["--output", str(output), "--only", "_second"])
    assert output.read_text().rstrip().endswith("(`python -m knuma.bench.report --only _second`).")
    with pytest.raises(SystemExit, match="unknown section"):
        report.main(["--output", str(output), "--only", "nope"])
