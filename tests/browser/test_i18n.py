"""A clinician switches ClinReview to Chinese, reviews with the keyboard, reads the CT and grading
pages in Chinese, and finds Chinese again after logging out and in."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotations.models import Case, Grade, Item, Review, UserProfile
from annotations.selectors.cases import memmaps
from annotations.services.cases import gastricx_import
from annotations.services.grading import grading_session_create
from annotations.services.review import assignments_create
from tests.browser.conftest import screenshot
from tests.cases.builders import SMALL_GEOMETRY, write_case
from tests.factories import jpeg_bytes, make_personas
from tests.i18n.scan import content_strings, english_words
from tests.review.helpers import assigned_benchmark
from tests.runs.helpers import make_done_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REVIEW_LABELS = ("版本", "接受", "修改", "拒绝", "跳到下一题", "快捷键", "已审阅", "退出登录")
CT_LABELS = (
    "动脉期",
    "静脉期",
    "延迟期",
    "标注框",
    "画框",
    "检验指标",
    "报告",
    "窗宽",
    "窗位",
    "层面",
)
GRADING_LABELS = (
    "左侧回答",
    "右侧回答",
    "完整性",
    "精确性",
    "A 更好",
    "不相上下",
    "保存并进入下一题",
)


@pytest.fixture
def world(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    memmaps.clear()
    people = make_personas()
    benchmark, items = assigned_benchmark(people, items=3, name="endo-zh", family="endobench")
    for item in items:  # large frames, as in real work
        item.item_images.update(image=_large_image(item.source_index))
    write_case(tmp_path / "cases", "GX-ZH-0001", phases=SMALL_GEOMETRY)
    cases = gastricx_import(path=tmp_path / "cases", name="gx-zh", user=people["curator"])
    # The case's questions go to the reviewers after the frames: alice draws boxes as their reviewer.
    assignments_create(benchmark=cases, reviewers=[people["reviewer"], people["reviewer2"]])
    first = make_done_run(benchmark, items, label="model-one", answers={1: "B"})
    second = make_done_run(benchmark, items, label="model-two", answers={2: "C"})
    session = grading_session_create(run_a=first, run_b=second, created_by=people["curator"])
    yield {
        "items": items,
        "case": Case.objects.get(case_id="GX-ZH-0001"),
        "session": session,
    }
    memmaps.clear()


def _large_image(index: int):
    from annotations.services.images import image_store

    return image_store(data=jpeg_bytes((150 + 20 * index, 70, 60), size=(640, 480)))[0]


def english_left(page) -> list[str]:
    """English interface words on the page as drawn, JavaScript's labels included."""
    return sorted(set(english_words(page.content(), content_strings())))


def assert_in_chinese(page, labels):
    assert page.get_attribute("html", "lang") == "zh-hans"
    text = page.inner_text("body")
    assert [label for label in labels if label not in text] == []
    assert english_left(page) == []


def open_case(page, live_server, case):
    page.goto(f"{live_server.url}/cases/{case.pk}/")
    page.wait_for_selector("#ct-viewer[data-loaded=true]")


def test_a_clinician_works_in_chinese_and_finds_it_again_after_logging_in(
    page, live_server, login, world
):
    login("alice")
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector("[data-review-form]")
    assert "Accept" in page.inner_text(".verdicts")
    screenshot(page, "i18n_review_en")
    open_case(page, live_server, world["case"])
    assert "Slice" in page.inner_text(".ct-viewport[data-phase=arterial] [data-role=slice]")
    screenshot(page, "i18n_ct_en")
    page.goto(f"{live_server.url}/grading/{world['session'].pk}/")
    screenshot(page, "i18n_grading_en")

    page.click("[data-language-switch] button[value=zh-hans]")
    page.wait_for_load_state("networkidle")
    assert page.url.endswith(f"/grading/{world['session'].pk}/")  # back where the switch was
    assert UserProfile.objects.get(user__username="alice").language == "zh-hans"

    _reviews_with_the_keyboard_in_chinese(page, live_server, world["items"])
    _reads_the_ct_page_in_chinese(page, live_server, world["case"])
    _grades_in_chinese(page, live_server, world["session"])

    page.click("header form[action='/logout/'] button")
    page.context.clear_cookies()  # another browser: only the profile remembers the choice
    page.goto(f"{live_server.url}/login/")
    assert page.get_attribute("html", "lang") == "en"
    login("alice")
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert "退出登录" in page.inner_text("header")
    assert english_left(page) == []


def _reviews_with_the_keyboard_in_chinese(page, live_server, items):
    page.goto(f"{live_server.url}/review/")
    page.wait_for_selector("html[data-review-keys=ready] [data-review-form]")
    assert_in_chinese(page, REVIEW_LABELS)
    screenshot(page, "i18n_review_zh")
    page.keyboard.press("?")
    expect(page.locator("[data-help]")).to_contain_text("键盘快捷键")
    assert english_left(page) == []
    page.keyboard.press("Escape")

    page.keyboard.press("1")  # accept the first item
    page.wait_for_function("document.querySelector('[data-progress]').innerText.includes('1 /')")
    page.keyboard.press("3")  # reject the second: reason 2, Enter
    expect(page.locator(".reasons")).to_be_visible()
    expect(page.locator(".reject-mode")).to_contain_text("为什么拒绝此题目？")
    page.keyboard.press("2")
    screenshot(page, "i18n_review_reject_zh")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('[data-progress]').innerText.includes('2 /')")
    assert_in_chinese(page, REVIEW_LABELS)
    verdicts = dict(
        Review.objects.filter(reviewer__username="alice").values_list("item", "verdict")
    )
    assert verdicts == {items[0].pk: "accept", items[1].pk: "reject"}
    assert Item.objects.get(pk=items[1].pk).question == items[1].question  # content untouched


def _reads_the_ct_page_in_chinese(page, live_server, case):
    open_case(page, live_server, case)
    slice_label = page.inner_text(".ct-viewport[data-phase=arterial] [data-role=slice]")
    assert slice_label.startswith("层面 ")  # drawn by the ES module, through the JS catalog
    page.keyboard.press("2")  # the liver window preset
    expect(page.locator("#ct-wl")).to_have_text(re.compile(r"^肝脏 · 窗宽 "))
    stage = page.locator(".ct-viewport[data-phase=venous] .ct-stage").bounding_box()
    page.keyboard.press("b")
    page.mouse.move(stage["x"] + stage["width"] * 0.3, stage["y"] + stage["height"] * 0.3)
    page.mouse.down()
    page.mouse.move(stage["x"] + stage["width"] * 0.6, stage["y"] + stage["height"] * 0.6, steps=5)
    page.mouse.up()
    page.keyboard.press("Enter")
    page.wait_for_selector("#box-status:has-text('已保存。')")
    assert "新标注框" not in page.inner_text("#box-title")  # saved: it now has its number
    assert_in_chinese(page, CT_LABELS)
    assert "Wall thickening along the greater curvature." in page.inner_text(".reports")
    screenshot(page, "i18n_ct_zh")


def _grades_in_chinese(page, live_server, session):
    page.goto(f"{live_server.url}/grading/{session.pk}/")
    page.wait_for_selector("#grade-form")
    assert_in_chinese(page, GRADING_LABELS)
    screenshot(page, "i18n_grading_zh")
    page.keyboard.press("t")
    page.keyboard.press("Enter")
    page.wait_for_function("!document.querySelector('.pref input:checked')")
    assert Grade.objects.get(grader__username="alice").preference == "tie"
    assert_in_chinese(page, GRADING_LABELS)
