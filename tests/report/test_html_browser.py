"""report --format html in a real browser: headless Chromium, driven by Playwright.

The page is opened from disk (a file:// URL), as a reader who saved it would:
no console error, no request but the page itself, the tables and charts there
with the report's numbers, a screenshot that shows them, and a printed copy.

Needs Debian's ``chromium`` package (``apt-get install chromium``; .ci/run
installs it) and ``playwright`` (the test extra). Playwright's own browser
download is never used: the test drives the system's Chromium, so it skips,
saying which is missing, where either is not there.

``python tests/report/test_html_browser.py`` writes the screenshot that
docs/report.md shows (docs/report-example/report.png).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import PNG_SIGNATURE, REPO, run_report  # noqa: E402

EXAMPLE = REPO / "docs" / "report-example"
SCREENSHOT = EXAMPLE / "report.png"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
# No network of any kind, no first-run or background work: only the page.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
VIEWPORT = {"width": 1000, "height": 900}


def chromium() -> str | None:
    """The system's Chromium (Debian installs /usr/bin/chromium), or None."""
    found = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    return found if found and os.access(found, os.X_OK) else None


def browser_or_skip() -> str:
    """Chromium's path; the test is skipped, saying what is missing, without it or Playwright."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (it is in the test extra: pip install "
                    "'.[test]'); the page was not opened in a browser")
    path = chromium()
    if path is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run "
                    "does it as root); the page was not opened in a browser")
    # Ubuntu's chromium is a wrapper that asks for a snap: seen here, not as a launch failure
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"{path} does not run ({e}); the page was not opened in a browser")
    if version.returncode != 0 or "chrom" not in version.stdout.lower():
        said = (version.stdout + version.stderr).strip().splitlines()[:1]
        pytest.skip(f"{path} --version failed ({said[0] if said else version.returncode}); "
                    "the page was not opened in a browser")
    return path


@contextmanager
def page_in_chromium(executable: str, profile: Path) -> Iterator[Any]:
    """A page of a fresh headless Chromium (its own empty profile), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=executable, headless=True, args=CHROMIUM_ARGS,
            viewport=VIEWPORT, device_scale_factor=1, offline=True)
        try:
            yield context.new_page()
        finally:
            context.close()


def write_page(out: Path, *csvs: Path) -> tuple[Path, dict]:
    r = run_report(*csvs, "--format", "html")
    assert r.exit_code == 0, r.output
    out.write_text(r.stdout, encoding="ascii")
    return out, json.loads(run_report(*csvs, "--format", "json").stdout)


def image_of(png: bytes) -> Any:
    from PIL import Image  # matplotlib's own dependency: there with the test extra

    assert png.startswith(PNG_SIGNATURE)
    return Image.open(io.BytesIO(png)).convert("RGB")


def has_colour(img: Any, rgb: tuple[int, int, int], tolerance: int = 40) -> bool:
    return any(all(abs(a - b) <= tolerance for a, b in zip(c, rgb, strict=True))
               for _, c in img.getcolors(maxcolors=1 << 24))


@pytest.mark.slow
def test_the_page_in_chromium(tmp_path, monkeypatch):
    executable = browser_or_skip()
    from test_html import HOSTILE_CONFIG, HOSTILE_SYSTEM, hostile_file

    monkeypatch.chdir(EXAMPLE)
    hostile = hostile_file(tmp_path / "hostile.csv")
    page_path, data = write_page(tmp_path / "report.html", Path("sweep.csv"), hostile)
    url = page_path.as_uri()
    console: list[str] = []
    errors: list[str] = []
    requests: list[str] = []
    with page_in_chromium(executable, tmp_path / "profile") as page:
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")

        assert requests == [url]  # the page itself, nothing else: no network, no other file
        assert console == [] and errors == []
        assert page.title() == f"Scaling report: sweep.csv, {hostile}"

        # the tables, with the report's numbers as the browser shows them
        tables = page.locator("table.scaling")
        assert tables.count() == len(data["groups"])
        for i, g in enumerate(data["groups"]):
            rows = tables.nth(i).locator("tbody tr")
            assert rows.count() == len(g["points"])
            for k, p in enumerate(g["points"]):
                shown = rows.nth(k).locator("td").all_inner_texts()
                assert shown[1] == f"{p['nodes']:,}"
                assert shown[5] == (f"{p['tokens_per_sec_per_gpu']:,.1f}"
                                    if p["tokens_per_sec_per_gpu"] >= 10
                                    else f"{p['tokens_per_sec_per_gpu']:.3f}")
                assert shown[6] == f"{p['efficiency']:.3f}"
                assert shown[9].startswith(p["sources"][0].rsplit(":", 1)[0])

        # the charts: drawn, with a marker per point, inside the chart's box
        charts = page.locator("svg.chart")
        assert charts.count() == 2  # the example's scaling config, and the hostile file's
        for i in range(charts.count()):
            box = charts.nth(i).bounding_box()
            assert box["width"] > 600 and box["height"] > 300
            points = charts.nth(i).locator("g.pt")
            assert points.count() > 1
            for k in range(points.count()):
                dot = points.nth(k).bounding_box()
                assert dot["width"] > 4 and dot["height"] > 4
                assert box["x"] <= dot["x"] and dot["x"] + dot["width"] <= box["x"] + box["width"]
                assert box["y"] <= dot["y"] and dot["y"] + dot["height"] <= box["y"] + box["height"]
        # the charts in the order of their configs: the hostile one sorts first
        agpt = [g for g in data["groups"] if g["config"] == "agpt-2b/bs1/seq2048/tp1"]
        drawn = charts.nth(1).locator("g.pt")
        assert [float(drawn.nth(k).get_attribute("data-value")) for k in range(drawn.count())] \
            == [p["tokens_per_sec_per_gpu"] for g in agpt for p in g["points"]]

        # a hostile cell is text: no script ran, no element was made from it
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert page.locator("script, img").count() == 0
        headings = page.locator("h3").all_inner_texts()
        assert f"{HOSTILE_CONFIG} on {HOSTILE_SYSTEM}" in headings

        # a screenshot shows them: the chart's lines, the red rings of flagged points
        shot = tmp_path / "page.png"
        page.screenshot(path=str(shot), full_page=True)
        img = image_of(shot.read_bytes())
        assert img.width == VIEWPORT["width"] and img.height > 3000
        chart = image_of(charts.nth(1).screenshot())
        assert len(chart.getcolors(maxcolors=1 << 24)) > 50  # not blank, not one flat colour
        for colour in ((31, 119, 180), (255, 127, 14), (214, 39, 40)):  # aurora, perlmutter,
            assert has_colour(chart, colour, 25), colour  # and a flag's ring

        # printed: no table of contents, every table and chart still there, on several pages
        page.emulate_media(media="print")
        assert page.locator("nav.toc").is_hidden()
        assert page.locator("table.scaling").first.is_visible()
        pdf = page.pdf(format="A4")
        assert pdf.startswith(b"%PDF-") and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 3

        # the checks above can fail: the same page without its policy, with an image from
        # the network and a script, is seen to fetch and to err
        page.emulate_media(media="screen")
        tampered = tmp_path / "tampered.html"
        tampered.write_text(page_path.read_text(encoding="ascii").replace(
            "<meta http-equiv=", "<meta data-was=").replace(
            "</main>", '<img src="http://192.0.2.1/x.png"/><script>undefined_name()</script>'
                       "</main>"), encoding="ascii")
        page.goto(tampered.as_uri(), wait_until="load")
        assert "http://192.0.2.1/x.png" in requests and errors


def write_docs_screenshot() -> Path:
    """The screenshot docs/report.md shows: the top of the example's page, to the end of its
    first config's tables."""
    executable = chromium()
    if executable is None:
        raise SystemExit("Chromium is not installed (Debian: apt-get install chromium)")
    import tempfile

    os.chdir(EXAMPLE)
    with tempfile.TemporaryDirectory() as tmp:
        page_path, _ = write_page(Path(tmp) / "report.html", Path("sweep.csv"))
        with page_in_chromium(executable, Path(tmp) / "profile") as page:
            page.goto(page_path.as_uri(), wait_until="load")
            end = page.locator("section.config").first.bounding_box()
            height = end["y"] + end["height"] + 10
            SCREENSHOT.write_bytes(page.screenshot(
                full_page=True, clip={"x": 0, "y": 0, "width": VIEWPORT["width"],
                                      "height": height}))
    return SCREENSHOT


if __name__ == "__main__":
    print(f"wrote {write_docs_screenshot().relative_to(REPO)}")
