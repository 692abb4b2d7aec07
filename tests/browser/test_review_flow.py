"""The whole double-review flow in Chromium, played with the keyboard, down to the release TSV."""

from __future__ import annotations

import pandas as pd
import pytest
from playwright.sync_api import expect

from annotations.models import Item, Review
from annotations.services.releases import release_export
from annotations.services.review import assignments_create
from tests.browser.conftest import screenshot
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EDITED = "Which type of polyp is seen in this colonoscopy frame?"


def press(page, *keys):
    for key in keys:
        page.keyboard.press(key)


def switch_to(page, login, username):
    page.context.clear_cookies()  # log the previous person out
    login(username)


def review_as(page, login, live_server, username):
    switch_to(page, login, username)
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector("html[data-review-keys=ready] [data-review-form]")
    # A marker that a full page load would wipe: htmx must swap the work area in place.
    page.evaluate("window.__samePage = true")


def test_two_reviewers_disagree_and_agree_then_the_adjudicator_resolves(
    page, live_server, login, tmp_path
):
    people = make_personas()
    benchmark = make_benchmark("endo-flow", family="endobench")
    disputed = make_item(
        benchmark, index=1, image=jpeg_bytes((180, 60, 60), size=(640, 480)), answer="A"
    )
    agreed = make_item(
        benchmark, index=2, image=jpeg_bytes((60, 140, 90), size=(640, 480)), answer="C"
    )
    make_item(benchmark, index=3, category="Anatomy")  # not assigned: stays pending, not released
    assignments_create(
        benchmark=benchmark,
        reviewers=[people["reviewer"], people["reviewer2"]],
        filters={"status": "pending", "category": "Lesion"},
    )
    _alice_edits_the_first_and_accepts_the_second(page, login, live_server, disputed, agreed)
    _bob_rejects_the_first_and_accepts_the_second(page, login, live_server)
    assert Item.objects.get(pk=disputed.pk).status == "disputed"
    assert Item.objects.get(pk=agreed.pk).status == "agreed"
    _carol_takes_alices_edit(page, login, live_server, disputed)
    _the_curator_sees_agreement(page, login, live_server)

    result = release_export(benchmark=benchmark, out_dir=tmp_path / "release")
    table = pd.read_csv(result.folder / "endo-flow.tsv", sep="\t")
    assert list(table["index"]) == [1, 2]
    first, second = table.iloc[0], table.iloc[1]
    assert (first["question"], first["answer"]) == (EDITED, "B")
    assert (second["question"], second["answer"]) == (agreed.question, "C")
    assert list(first[["A", "B", "C", "D"]]) == ["Polyp", "Ulcer", "Normal mucosa", "Bleeding"]


def _alice_edits_the_first_and_accepts_the_second(page, login, live_server, disputed, agreed):
    review_as(page, login, live_server, "alice")
    assert page.url.endswith(f"/review/items/{disputed.pk}/")
    assert "0 / 2" in page.inner_text("[data-progress]")
    screenshot(page, "review_page")
    press(page, "?")
    assert page.is_visible("[data-help]")
    screenshot(page, "review_help")
    press(page, "Escape")
    assert not page.is_visible("[data-help]")
    press(page, "+", "+")  # zoom in on the frame
    # The image and its box layer zoom together: the transform is on their wrapper.
    assert "scale(1.5625)" in page.get_attribute("[data-zoom-pane] .zoom-content", "style")
    press(page, "0")

    press(page, "2")  # edit: focus lands in the question
    assert page.is_visible("textarea[name=question]")
    press(page, "Control+A")
    page.keyboard.type(EDITED)
    press(page, "Tab", "ArrowDown")  # into the answer radios: B becomes the answer
    screenshot(page, "review_edit_mode")
    press(page, "Control+Enter")
    page.wait_for_function("document.querySelector('[data-progress]').innerText.includes('1 / 2')")
    assert page.evaluate("window.__samePage") is True
    assert page.url.endswith(f"/review/items/{agreed.pk}/")

    press(page, "1")  # accept the second item
    page.wait_for_selector("text=Your queue is empty")
    assert page.evaluate("window.__samePage") is True
    edit = Review.objects.get(item=disputed, reviewer__username="alice")
    assert (edit.verdict, edit.content["question"], edit.content["answer"]) == ("edit", EDITED, "B")
    assert edit.seconds_spent > 0


def _bob_rejects_the_first_and_accepts_the_second(page, login, live_server):
    review_as(page, login, live_server, "bob")
    assert EDITED not in page.content()  # blinded: alice's edit is nowhere on bob's page
    press(page, "3")
    assert page.is_visible(".reasons")
    press(page, "2")  # ambiguous
    screenshot(page, "review_reject_mode")
    press(page, "Enter")
    page.wait_for_function("document.querySelector('[data-progress]').innerText.includes('1 / 2')")
    press(page, "1")
    page.wait_for_selector("text=Your queue is empty")
    assert page.evaluate("window.__samePage") is True
    reject = Review.objects.get(reviewer__username="bob", verdict="reject")
    assert reject.reason == "ambiguous"


def _carol_takes_alices_edit(page, login, live_server, disputed):
    switch_to(page, login, "carol")
    page.goto(f"{live_server.url}/adjudication/")
    assert page.locator("table tbody tr").count() == 1
    page.goto(f"{live_server.url}/adjudication/items/{disputed.pk}/")
    assert page.is_visible(".adj-a .d-ins")  # alice's new words are highlighted
    assert "Ambiguous" in page.inner_text(".adj-b")
    screenshot(page, "adjudication")
    press(page, "a")  # asks first: the same key again takes A
    expect(page.locator("[data-take-for=a]")).to_be_visible()
    assert not Item.objects.filter(pk=disputed.pk, status="adjudicated").exists()
    press(page, "a")
    page.wait_for_selector("text=No disputed item left")
    item = Item.objects.get(pk=disputed.pk)
    assert (item.status, item.question, item.answer, item.version) == (
        "adjudicated",
        EDITED,
        "B",
        2,
    )
    page.goto(f"{live_server.url}/items/{disputed.pk}/history/")
    assert page.locator(".ev-review").count() == 2
    assert page.locator(".ev-adjudication").count() == 1
    screenshot(page, "item_history")


def _the_curator_sees_agreement(page, login, live_server):
    switch_to(page, login, "dave")
    page.goto(f"{live_server.url}/benchmarks/endo-flow/agreement/")
    assert page.inner_text("[data-stat=n]") == "2"
    assert page.inner_text("[data-stat=percent]") == "50 %"
    screenshot(page, "agreement")
