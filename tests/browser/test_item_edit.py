"""A curator corrects an item in Chromium: opens it, edits, saves with the keyboard, and meets a
conflict when someone else saved first, without losing what was typed."""

from __future__ import annotations

import pytest

from annotations.models import Item, ItemRevision, ItemStatus
from tests.browser.conftest import screenshot
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_corrects_an_item_and_a_stale_save_keeps_the_draft(page, live_server, login):
    people = make_personas()
    benchmark = make_benchmark("endo-edit", family="endobench")
    item = make_item(
        benchmark, index=4, image=jpeg_bytes((170, 80, 70), size=(640, 480)), answer="A"
    )
    Item.objects.filter(pk=item.pk).update(status=ItemStatus.AGREED)
    login(people["curator"].username)
    page.goto(f"{live_server.url}/items/{item.pk}/")
    page.click("[data-edit-item]")
    page.wait_for_selector("html[data-review-keys=ready] [data-edit-form]")

    page.fill("textarea[name=question]", "Which lesion is seen in this gastroscopy frame?")
    rows = page.locator("[data-opt-row]")
    rows.nth(2).locator("[data-opt=up]").click()  # "Normal mucosa" moves to B
    rows.nth(2).locator("input[type=radio]").check()  # "Ulcer", now C, is the answer
    page.fill("input[name=note]", "Clearer question; answer fixed")
    screenshot(page, "item_edit")
    page.focus("textarea[name=question]")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(f"**/items/{item.pk}/")

    assert "Saved as version 2." in page.inner_text(".messages")
    assert "Which lesion is seen in this gastroscopy frame?" in page.inner_text(".question-text")
    assert page.inner_text(".options li.correct").strip().endswith("Ulcer")
    saved = Item.objects.get(pk=item.pk)
    assert (saved.version, saved.options, saved.answer) == (
        2,
        ["Polyp", "Normal mucosa", "Ulcer", "Bleeding"],
        "C",
    )
    assert ItemRevision.objects.get(item=item, version=2).note == "Clearer question; answer fixed"

    # Someone else saves while the curator types: the save is refused, the draft stays.
    page.click("[data-edit-item]")
    page.wait_for_selector("html[data-review-keys=ready] [data-edit-form]")
    page.fill("textarea[name=question]", "My second correction")
    Item.objects.filter(pk=item.pk).update(version=3, question="Saved by someone else")
    page.click("[data-save]")
    page.wait_for_selector("[data-edit-error]")
    assert "changed since you opened it" in page.inner_text("[data-edit-error]")
    assert "Saved by someone else" in page.inner_text("[data-current-version]")
    assert page.input_value("textarea[name=question]") == "My second correction"
    screenshot(page, "item_edit_conflict")
    assert Item.objects.get(pk=item.pk).question == "Saved by someone else"
