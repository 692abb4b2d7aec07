"""The top bar in Chromium: one menu per area, fits 1024 px, works by keyboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER
from tests.browser.conftest import screenshot
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
EVERY = {"Benchmarks", "Review queue", "Adjudication", "Agreement", "Human baseline", "Runs"}
EVERY |= {"Releases", "Jobs", "Grading", "CT cases", "Pairs", "Triage", "API"}
EVERY |= {"Import a benchmark"}


def test_a_user_with_every_role_reaches_every_page_at_1024_px(page, live_server, login):
    make_user("zed", REVIEWER, ADJUDICATOR, CURATOR)
    page.set_viewport_size({"width": 1024, "height": 700})
    login("zed")
    page.wait_for_selector("html[data-nav-ready=ready]")
    scroll_width, width = page.evaluate(WIDTHS)
    assert scroll_width <= width  # no sideways scroll
    bar = page.locator(".topbar").bounding_box()
    assert bar["width"] <= 1024 and bar["height"] <= 60  # one line
    areas = page.locator("nav.mainnav summary").all_inner_texts()
    assert areas == ["Review", "Curate", "Models", "Admin"]
    links = set(page.locator("nav.mainnav a").all_text_contents())
    assert {link.strip() for link in links} == EVERY
    page.click("details[data-navgroup=curate] summary")
    screenshot(page, "topbar_curate_menu")
    menu = page.locator("details[data-navgroup=curate] .navmenu").bounding_box()
    assert menu["x"] + menu["width"] <= 1024
    page.click("details[data-navgroup=models] summary")  # opening one closes the other
    # The closing is done by the page's script after the click: wait for it.
    expect(page.locator("details[data-navgroup=curate]")).to_have_js_property("open", False)
    page.click("details[data-navgroup=models] .navmenu >> text=Runs")
    page.wait_for_url("**/runs/")
    assert page.locator("details[data-navgroup=models] summary").evaluate(
        "s => getComputedStyle(s).boxShadow"
    ) not in ("", "none")  # the area of the page you are on is marked


def test_the_menus_work_by_keyboard(page, live_server, login):
    make_user("cathy", CURATOR)
    login("cathy")
    page.wait_for_selector("html[data-nav-ready=ready]")
    page.focus("details[data-navgroup=curate] summary")
    page.keyboard.press("Enter")
    curate = page.locator("details[data-navgroup=curate]")
    expect(curate).to_have_js_property("open", True)
    page.keyboard.press("Escape")
    expect(curate).to_have_js_property("open", False)
    expect(page.locator("details[data-navgroup=curate] summary")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url("**/triage/")


def test_the_menus_open_without_script(browser, live_server):
    from tests.factories import PASSWORD

    make_user("rita", REVIEWER)
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1024, "height": 700}
    )
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("nav.mainnav summary")).to_have_text(["Review", "Models", "Admin"])
    page.click("details[data-navgroup=review] summary")
    page.click("details[data-navgroup=review] .navmenu >> text=Review queue")
    page.wait_for_url("**/review/")
    context.close()
