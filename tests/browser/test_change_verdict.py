"""A reviewer decides by mistake and changes the verdict; a refused decision keeps the typed edit
in the styled work area (in Chromium, with the keyboard)."""

from __future__ import annotations

import pytest

from annotations.models import Review, ReviewChange
from annotations.services.review import assignments_create, review_submit
from tests.browser.conftest import screenshot
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TYPED = "Which polyp type does the frame show under narrow-band light?"


def open_item(page, live_server, item):
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    page.wait_for_selector("html[data-review-keys=ready] [data-review-work]")
    page.evaluate("window.__samePage = true")  # a full page load would wipe it


def test_a_mistaken_verdict_is_changed_and_a_refused_edit_keeps_what_was_typed(
    page, live_server, login
):
    people = make_personas()
    benchmark = make_benchmark("endo-change", family="endobench")
    first, second = (
        make_item(benchmark, index=i, image=jpeg_bytes((150, 70 + 40 * i, 60), size=(640, 480)))
        for i in (1, 2)
    )
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    login("alice")

    # 1. Accept by mistake (key 1): the queue moves on to the second item.
    open_item(page, live_server, first)
    page.keyboard.press("1")
    page.wait_for_function(f"location.pathname.endsWith('/review/items/{second.pk}/')")
    assert Review.objects.get(item=first).verdict == "accept"

    # 2. Back to the first item: the verdict can still change (the other review is not in).
    open_item(page, live_server, first)
    assert page.is_visible("[data-change-verdict]")
    screenshot(page, "review_own_verdict_changeable")
    page.keyboard.press("c")
    page.wait_for_selector("[data-changing]")
    page.keyboard.press("3")
    page.keyboard.press("1")  # wrong answer
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-review-notice]")
    assert "Your verdict is changed." in page.inner_text("[data-review-notice]")
    assert page.evaluate("window.__samePage") is True
    review = Review.objects.get(item=first)
    assert (review.verdict, review.reason) == ("reject", "wrong_answer")
    assert ReviewChange.objects.get().verdict == "accept"
    screenshot(page, "review_verdict_changed")

    # 3. The second item, meanwhile decided in another tab: the typed edit is refused, kept.
    open_item(page, live_server, second)
    review_submit(item=second, reviewer=people["reviewer"], verdict="accept", version=1)
    page.keyboard.press("2")
    page.fill("textarea[name=question]", TYPED)
    page.fill("textarea[name=comment]", "NBI shows a type 2 pattern")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("[data-review-error]")
    assert "already reviewed" in page.inner_text("[data-review-error]")
    assert page.evaluate("window.__samePage") is True  # swapped in the work area
    assert page.input_value("textarea[name=question]") == TYPED
    assert page.input_value("textarea[name=comment]") == "NBI shows a type 2 pattern"
    assert page.is_visible(".topbar, header")  # the page's own layout is still there
    error_background = page.evaluate(
        "getComputedStyle(document.querySelector('[data-review-error]')).backgroundColor"
    )
    assert error_background not in ("rgba(0, 0, 0, 0)", "transparent")  # styled, not bare text
    screenshot(page, "review_refused_keeps_draft")

    # 4. The kept draft becomes the changed verdict with one more Ctrl+Enter.
    page.focus("textarea[name=question]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("[data-review-notice]")
    changed = Review.objects.get(item=second, reviewer=people["reviewer"])
    assert (changed.verdict, changed.content["question"]) == ("edit", TYPED)
    assert changed.comment == "NBI shows a type 2 pattern"
