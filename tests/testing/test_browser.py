"""The browser driver catches what breaks a page for its reader: failed images, console errors, exceptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from knuma.testing.browser import BrowserMissing, find_chromium, load_page, pixels


@pytest.mark.slow
async def test_a_broken_page_is_reported(tmp_path: Path, chromium: str) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!doctype html><html><head><title>broken</title><link rel='icon' href='data:,'></head>"
        "<body style='background:#fff'><p>hello</p><img src='missing.png'>"
        "<script>console.error('boom'); undefinedFunction();</script></body></html>"
    )
    check = await load_page(page.as_uri(), chromium=chromium)
    assert check.title == "broken"
    assert check.text.strip() == "hello"
    assert [(i.src, i.natural_width) for i in check.images] == [("missing.png", 0)]
    errors = "\n".join(check.console_errors)
    assert "console.error: boom" in errors
    assert "undefinedFunction is not defined" in errors
    assert "missing.png" in errors  # the browser's own "failed to load resource"
    shot = pixels(check.screenshot)
    assert shot.width == 1280
    assert shot.inked < 0.02 and shot.coloured < 0.001  # a nearly blank page reads as one


def test_a_missing_chromium_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("KNUMA_CHROMIUM", raising=False)
    with pytest.raises(BrowserMissing, match="apt-get install -y --no-install-recommends chromium"):
        find_chromium()
    monkeypatch.setenv("KNUMA_CHROMIUM", str(tmp_path / "nope"))
    with pytest.raises(BrowserMissing, match=r"KNUMA_CHROMIUM=.*nope is not an executable"):
        find_chromium()
