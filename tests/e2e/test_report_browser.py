"""The HTML report of a real run, opened in real headless Chromium.

Two flows are recorded through the CLI against the scripted upstream, then replayed with one of
them diverging (the agent rewrites the flight id). The run record that replay writes is rendered
with `flowproof report --html`, and Chromium (Debian's `chromium` package, installed by
`.ci/run`) loads the page: no console errors, the divergence path is visible text, and a
full-page screenshot is kept as a CI artifact.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, flowproof
from tests.e2e.booking import BOOKING_SCRIPT, record, write_spec
from tests.upstream.scripted import ScriptedUpstream

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Read at import time: the autouse clean_environ fixture strips FLOWPROOF_* before each test.
# A value ending in .png is the screenshot's path; anything else is a directory to put
# report.png (and the report.html it shows) in.
ARTIFACTS = os.environ.get("FLOWPROOF_ARTIFACTS") or str(ROOT / ".artifacts")
DIVERGENCE_PATH = 'flight.id: recorded "KQ311", replayed "KQ999"'
STEPS = (
    "  - assert_tool_call: create_booking where flight.id equals KQ311\n"
    "  - assert: reply contains B-1042\n"
)


pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (Debian: apt-get install -y chromium)"
)
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is missing (pip install playwright)"
)


def screenshot_path() -> Path:
    path = Path(ARTIFACTS)
    return path if path.suffix == ".png" else path / "report.png"


def name_flow(spec: Path, name: str) -> None:
    text = spec.read_text()
    spec.write_text(text.replace("name: Booking assistant books a flight", f"name: {name}", 1))


@pytest.fixture
def diverged_run(tmp_path: Path, upstream: ScriptedUpstream) -> Path:
    """A project whose last `flowproof run` had one passing and one diverged flow."""
    upstream.script = BOOKING_SCRIPT * 2  # one booking conversation per spec, in spec order
    write_spec(tmp_path, name="booking", extra_steps=STEPS)
    name_flow(
        write_spec(tmp_path, name="rebooking", extra_steps=STEPS), "Rebooking keeps the flight"
    )
    recorded = record(tmp_path, upstream)
    assert recorded.code == 0, recorded.output
    upstream.stop()
    bugged = write_spec(
        tmp_path,
        name="rebooking",
        extra_steps=STEPS,
        agent_env={"AGENT_BUG": "rewrite-flight-id"},
    )
    name_flow(bugged, "Rebooking keeps the flight")
    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 1, replayed.output
    assert DIVERGENCE_PATH in replayed.stderr
    assert len(list((tmp_path / ".flowproof" / "runs").glob("*/report.json"))) == 2
    return tmp_path


def write_html_report(project: Path) -> Path:
    """`flowproof report --html` on the latest run record (the replay)."""
    out = project / "report.html"
    result = flowproof("report", "--html", str(out), cwd=project)
    assert result.code == 0, result.output
    return out


def test_html_report_of_a_diverged_run_in_headless_chromium(diverged_run: Path) -> None:
    html = write_html_report(diverged_run)
    shot = screenshot_path()
    shot.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(html, shot.with_suffix(".html"))

    problems: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "console",
                lambda message: (
                    problems.append(f"console {message.type}: {message.text}")
                    if message.type == "error"
                    else None
                ),
            )
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
            page.goto(html.as_uri(), wait_until="load")

            divergence = page.locator(".divergence .path")
            assert divergence.is_visible()
            assert DIVERGENCE_PATH in divergence.inner_text()
            assert page.get_by_text(DIVERGENCE_PATH).first.is_visible()
            body = page.locator("body").inner_text()
            assert "1 of 2 flows failed" in body
            assert (
                "Rebooking keeps the flight" in body and "Booking assistant books a flight" in body
            )
            assert page.locator("section.flow.fail").count() == 1
            assert page.locator("section.flow.pass").count() == 1
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert shot.stat().st_size > 10_000


LONG_PROMPT = (
    "Book me a flight to Nairobi tomorrow, an aisle seat near the front, one checked bag, "
    "a vegetarian meal, and send the confirmation to the address on file; "
    "if the morning flight is full, take the earliest one after it."
)


def test_the_changed_word_of_a_long_prompt_is_marked_on_both_sides(
    tmp_path: Path, upstream: ScriptedUpstream
) -> None:
    upstream.script = BOOKING_SCRIPT
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace("Book me a flight to Nairobi tomorrow", LONG_PROMPT))
    recorded = record(tmp_path, upstream)
    assert recorded.code == 0, recorded.output
    upstream.stop()
    spec.write_text(spec.read_text().replace("an aisle seat", "a window seat"))
    replayed = flowproof("run", "specs", cwd=tmp_path)
    assert replayed.code == 1, replayed.output
    html = write_html_report(tmp_path)

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.as_uri(), wait_until="load")
            was = page.locator(".divergence .side.del mark.changed")
            now = page.locator(".divergence .side.ins mark.changed")
            assert was.count() == 1 and now.count() == 1
            assert was.is_visible() and now.is_visible()
            # The marks hold what changed, not the whole prompt around it.
            assert was.inner_text() == "an aisle" and now.inner_text() == "a window"
            side = page.locator(".divergence .side.ins span").first.inner_text()
            assert "seat near the front" in side and len(side) > len(now.inner_text()) + 40
            background = now.evaluate("mark => getComputedStyle(mark).backgroundColor")
            assert background not in ("", "rgba(0, 0, 0, 0)", "transparent")
        finally:
            browser.close()
