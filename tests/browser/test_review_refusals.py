"""Refusals in place: browser Back to a decided item shows it decided, in the page's layout; a
decision refused because the item moved on renders in the normal layout, the draft kept and
what changed shown. Both for a work area swapped by htmx (multiple choice) and for a Gastric-X
page submitted in full (its case panel keeps the CT viewer)."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Review
from annotations.services.review import assignments_create, item_edit, review_submit
from tests.browser.conftest import screenshot
from tests.browser.decide import left_item, open_adjudication, open_review, review_decide
from tests.browser.review_worlds import CORRECTED, disputed, world
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def in_layout(page) -> None:
    """The page's own header, menu and styles are there (not a bare fragment)."""
    expect(page.locator("nav.mainnav")).to_be_visible()
    expect(page.locator("[data-help-toggle]").first).to_be_visible()
    # review.css hides the panels of the modes not chosen.
    expect(page.locator(".reject-mode:visible")).to_have_count(0)


def collect_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def two_items():
    people = make_personas()
    benchmark = make_benchmark("endo-back", family="endobench")
    items = [make_item(benchmark, index=i) for i in (1, 2)]
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return people, items


@pytest.mark.parametrize("kind", ["mcq", "label"])
def test_back_to_a_decided_item_shows_it_decided(page, live_server, login, tmp_path, kind):
    if kind == "mcq":
        people, (item, _second) = two_items()
    else:
        people, item = world(kind, tmp_path)
    errors = collect_errors(page)
    login(people["reviewer"].username)
    open_review(page, live_server, item)
    review_decide(page, kind, "accept")
    left_item(page, "[data-review-work]", item)

    page.go_back()
    expect(page.locator(f"[data-review-work][data-item='{item.pk}']")).to_be_visible()
    expect(page.locator("[data-own-review]")).to_be_visible()
    expect(page.locator("[data-review-form]")).to_have_count(0)
    in_layout(page)
    assert errors == []


@pytest.mark.parametrize("kind", ["mcq", "label"])
def test_a_decision_made_in_another_tab_refuses_this_one_in_place(
    page, live_server, login, tmp_path, kind
):
    """The reviewer decided the item in another tab while typing here: this edit is refused
    in the page's layout, the draft kept in the form that changes the verdict."""
    if kind == "mcq":
        people, (item, _second) = two_items()
    else:
        people, item = world(kind, tmp_path)
    errors = collect_errors(page)
    login(people["reviewer"].username)
    open_review(page, live_server, item)
    page.click("[data-review-form] .verdicts [data-mode-set=edit]")
    if kind == "mcq":
        page.locator("[data-opt-row]").nth(2).locator("input[type=radio]").check()
    else:
        page.locator("select[name=label]").select_option(CORRECTED[kind][0])
    page.fill("textarea[name=comment]", "Stage from the CT, not the report.")
    # Meanwhile another tab: the same reviewer decided the item already.
    review_submit(item=item, reviewer=people["reviewer"], verdict="accept", version=item.version)
    page.click("[data-review-form] button[data-verdict=edit]")

    expect(page.locator("[data-review-error]")).to_contain_text("already reviewed")
    in_layout(page)
    # The draft is kept, in the form that changes my verdict.
    expect(page.locator("textarea[name=comment]")).to_have_value(
        "Stage from the CT, not the report."
    )
    if kind == "label":
        expect(page.locator("select[name=label]")).to_have_value(CORRECTED[kind][0])
    screenshot(page, f"review_refused_in_place_{kind}")
    assert errors == []
    assert Review.objects.get(item=item).verdict == "accept"


def test_an_adjudication_of_a_changed_item_shows_what_changed(page, live_server, login, tmp_path):
    people, item = disputed("label", tmp_path)
    login(people["adjudicator"].username)
    open_adjudication(page, live_server, item)
    page.click("[data-adjudicate-form] .verdicts [data-mode-set=edit]")
    page.locator("[data-adjudicate-form] select[name=label]").select_option("T4aN2M0")
    page.fill("[data-adjudicate-form] textarea[name=comment]", "Serosa is breached.")
    # Meanwhile the dispute became stale: its version moved on (a curator's correction).
    item.status = "agreed"
    item.save(update_fields=["status"])
    item_edit(
        item=item, user=people["curator"], version=item.version, content={"answer": "T4aN2M0"}
    )
    item.refresh_from_db()
    item.status = "disputed"
    item.save(update_fields=["status"])
    page.click("[data-adjudicate-form] button.edit-only[data-choice=new]")

    expect(page.locator("[data-adjudicate-error]")).to_be_visible()
    expect(page.locator("[data-version-change]")).to_contain_text("T4aN2M0")
    in_layout(page)
    expect(page.locator("[data-adjudicate-form] textarea[name=comment]")).to_have_value(
        "Serosa is breached."
    )
