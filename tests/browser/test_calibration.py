"""The demo's MedQ-DEG run in Chromium: reliability diagrams, calibration shift, the cliff table,
a cliff's twins one click away, CSV exports; the screenshots in docs/ are taken here."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotations.models import Run
from tests.browser.conftest import docs_picture, nav, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _shot(page, locator, name: str) -> None:
    """A docs picture of one panel, taken from the whole page (the sticky top bar stays at the
    top of the page instead of covering the panel)."""
    box = locator.bounding_box()
    scrolled = page.evaluate("window.scrollY")
    clip = {"x": box["x"], "y": box["y"] + scrolled, "width": box["width"], "height": box["height"]}
    page.screenshot(path=str(docs_picture(name)), full_page=True, clip=clip)


def test_the_demo_medqdeg_run_shows_its_calibration_and_its_cliff(page, live_server, login):
    call_command("seed_demo", verbosity=0)
    run = Run.objects.get(benchmark__name="medqdeg-demo")
    page.set_viewport_size({"width": 1024, "height": 768})
    login("curator", "curator-demo")
    nav(page, "models", "Runs")
    page.click(f"a:has-text('{run.label}')")
    expect(page.get_by_test_id("calibration")).to_be_visible()

    diagrams = page.get_by_test_id("reliability-diagrams").locator("figure")
    expect(diagrams).to_have_count(3)
    # Mild and severe are drawn beside the clean curve.
    expect(diagrams.nth(2).locator("[data-curve=clean]")).to_have_count(1)
    expect(diagrams.nth(2).locator("[data-curve=severe] circle").first).to_be_visible()
    expect(page.get_by_test_id("calibration-shift")).to_contain_text("Over-confidence")
    _shot(page, page.get_by_test_id("calibration"), "run-calibration.png")

    cliffs = page.get_by_test_id("cliffs")
    cliff_rows = cliffs.locator("tr[data-cliff=true]")
    expect(cliff_rows.first).to_be_visible()
    expect(cliffs.locator("[data-cliff-count]")).not_to_have_text("0 cliffs")
    _shot(page, cliffs, "run-cliffs.png")

    # The CSV exports are links the page offers.
    with page.expect_download() as download:
        page.get_by_test_id("cliffs-csv").click()
    text = Path(download.value.path()).read_text()
    assert text.startswith("# cliff rule: ratio=2.0; min_drop=0.1; alpha=0.05; min_twins=20")
    assert ",True" in text

    # The cliff's twins, one click away: clean, mild and severe side by side with confidences.
    cliff_rows.first.locator("[data-twins-link]").click()
    triples = page.get_by_test_id("triple")
    expect(triples.first).to_be_visible()
    expect(triples).to_have_count(42)
    expect(triples.first.locator(".twin-card")).to_have_count(3)
    expect(triples.first.locator("[data-confidence]").first).to_contain_text("%")
    expect(page.get_by_test_id("cliff-summary")).to_contain_text("cliff")
    page.screenshot(path=str(docs_picture("run-cliff-twins.png")), full_page=False)
    screenshot(page, "run-cliff-twins")

    # Back on the run page, its leaderboard ranks with ECE, over-confidence at severe, cliffs.
    page.click(f"a:has-text('#{run.pk} {run.label}')")
    page.click("a:has-text('leaderboard')")
    expect(page.locator("td[data-col=cliffs]").first).to_have_text("1")
    expect(page.locator("td[data-col=ece]").first).to_have_text(
        f"{run.summary['calibration']['overall']['ece']:.3f}"
    )
    screenshot(page, "leaderboard-calibration")
