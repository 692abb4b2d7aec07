"""The top bar in Chromium: links that do not fit move into a "More" menu, never off screen."""

from __future__ import annotations

import pytest

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER
from tests.browser.conftest import screenshot
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BAR = "[document.querySelector('.mainnav').scrollWidth, document.querySelector('.mainnav').clientWidth]"


def test_a_user_with_every_role_reaches_every_page_from_a_narrow_window(page, live_server, login):
    make_user("zed", REVIEWER, ADJUDICATOR, CURATOR)
    page.set_viewport_size({"width": 1024, "height": 700})
    login("zed")
    page.wait_for_selector("html[data-nav-fitted=ready]")
    scroll_width, width = page.evaluate(BAR)
    assert scroll_width <= width  # nothing hidden past the edge of the bar
    in_bar = page.locator(".mainnav a").all_inner_texts()
    page.click("[data-nav-more] summary")
    in_menu = page.locator("[data-nav-more-menu] a").all_inner_texts()
    screenshot(page, "topbar_more_menu")
    assert in_menu and in_bar[0] == "Benchmarks"
    every = {"Benchmarks", "Review", "Adjudication", "Agreement", "Human baseline", "Runs"}
    every |= {"Releases", "Jobs", "Grading", "CT cases", "Pairs", "Triage", "API"}
    assert set(in_bar) | set(in_menu) == every and not set(in_bar) & set(in_menu)
    assert in_menu[-1] == "API"  # the last links move first, in their order
    page.click("[data-nav-more-menu] >> text=Triage")
    page.wait_for_url("**/triage/")

    page.set_viewport_size({"width": 2400, "height": 700})  # room again: the links come back
    page.wait_for_function("document.querySelector('[data-nav-more]').hidden")
    assert len(page.locator(".mainnav a").all_inner_texts()) == len(every)


def test_a_reviewer_sees_no_more_menu(page, live_server, login):
    make_user("rita", REVIEWER)
    login("rita")
    page.wait_for_selector("html[data-nav-fitted=ready]")
    assert not page.is_visible("[data-nav-more]")
    assert "Review" in page.locator(".mainnav a").all_inner_texts()
