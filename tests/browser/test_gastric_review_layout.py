"""A Gastric-X review page fits the work: at 1024×768 the question, the answer and the verdict
buttons are in view beside the CT, and every decision has a key that the CT viewer and the box
tool do not take (Shift with the verdict key). Screenshots for docs/ at 1024×768 and 1440×900."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Review
from tests.browser.conftest import docs_picture
from tests.browser.decide import left_item, open_review
from tests.browser.review_worlds import CORRECTED, world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ANSWER = {"label": "[data-label]", "open": "[data-reference]", "box3d": "[data-box-target]"}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def open_case_item(page, live_server, item) -> None:
    page.set_default_timeout(60_000)  # four phases of voxels to a loaded machine
    open_review(page, live_server, item)
    expect(page.locator("[data-case-panel] #ct-viewer")).to_have_attribute("data-loaded", "true")


@pytest.mark.parametrize("kind", ["label", "open", "box3d"])
def test_at_1024_the_question_answer_and_verdicts_are_in_view_beside_the_ct(
    page, live_server, login, tmp_path, kind
):
    people, item = world(kind, tmp_path)
    page.set_viewport_size({"width": 1024, "height": 768})
    login(people["reviewer"].username)
    open_case_item(page, live_server, item)
    for selector in (
        "[data-review-form] [data-question]",
        f"[data-review-form] {ANSWER[kind]}",
        "[data-review-form] button[data-verdict=accept]",
        "[data-review-form] .verdicts [data-mode-set=reject]",
        ".ct-viewport[data-phase=venous] .ct-stage",
    ):
        expect(page.locator(selector).first).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024  # no sideways scroll
    if kind == "label":
        page.screenshot(path=str(docs_picture("gastric-review-1024.png")))
        page.set_viewport_size({"width": 1440, "height": 900})
        expect(page.locator("[data-review-form] button[data-verdict=accept]")).to_be_in_viewport()
        page.screenshot(path=str(docs_picture("gastric-review-1440.png")))


def test_the_ct_is_enlarged_and_back_beside_the_decision(page, live_server, login, tmp_path):
    people, item = world("label", tmp_path)
    page.set_viewport_size({"width": 1024, "height": 768})
    login(people["reviewer"].username)
    open_case_item(page, live_server, item)
    page.click("[data-case-wide]")
    expect(page.locator(".review-grid")).to_have_class("review-grid with-case case-wide")
    venous = page.locator(".ct-viewport[data-phase=venous] .ct-stage")
    expect(venous).to_be_in_viewport()
    page.click("[data-case-wide]")
    expect(page.locator(".review-grid")).to_have_class("review-grid with-case")
    expect(page.locator("[data-review-form] button[data-verdict=accept]")).to_be_in_viewport()


def test_question_mark_opens_one_key_list_that_leads_to_the_viewers(
    page, live_server, login, tmp_path
):
    people, item = world("label", tmp_path)
    page.set_viewport_size({"width": 1024, "height": 768})
    login(people["reviewer"].username)
    open_case_item(page, live_server, item)
    review_keys, viewer_keys = page.locator("[data-help]"), page.locator("[data-ct-help]")
    page.keyboard.press("?")
    expect(review_keys).to_be_visible()
    expect(viewer_keys).to_be_hidden()  # one list at a time, not two stacked
    review_keys.get_by_role("button", name="The CT viewer's keys").click()
    expect(review_keys).to_be_hidden()
    expect(viewer_keys).to_be_visible()
    expect(viewer_keys).to_contain_text("Window presets")


@pytest.mark.parametrize(
    ("kind", "action"),
    [("label", "accept"), ("label", "edit"), ("open", "reject"), ("box3d", "accept"),
     ("retrieval", "reject")],
)  # fmt: skip
def test_a_case_item_is_decided_with_the_keyboard(page, live_server, login, tmp_path, kind, action):
    people, item = world(kind, tmp_path)
    login(people["reviewer"].username)
    open_case_item(page, live_server, item)
    page.keyboard.press("2")  # a CT window preset here, never a verdict
    expect(page.locator("[data-review-form]")).to_have_attribute("data-mode", "view")
    if action == "accept":
        page.keyboard.press("Shift+Digit1")
    elif action == "reject":
        page.keyboard.press("Shift+Digit3")
        expect(page.locator("[data-review-form]")).to_have_attribute("data-mode", "reject")
        page.keyboard.press("Shift+Digit1")  # the first reason
        expect(page.locator("[data-review-form] input[name=reason]").first).to_be_checked()
        page.keyboard.press("Enter")
    else:
        page.keyboard.press("Shift+Digit2")
        expect(page.locator("[data-review-form]")).to_have_attribute("data-mode", "edit")
        label = page.locator("select[name=label]")
        expect(label).to_be_focused()
        label.select_option(CORRECTED[kind][0])
        page.keyboard.press("Control+Enter")
    left_item(page, "[data-review-work]", item)
    review = Review.objects.get(item=item, reviewer=people["reviewer"])
    assert review.verdict == action
    if action == "edit":
        assert review.content["answer"] == CORRECTED[kind][0]
