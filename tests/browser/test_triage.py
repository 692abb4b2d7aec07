"""A curator who also reviews opens the triage page, filters by a reason, opens a suspect and
reviews it on the review page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from annotations.access import REVIEWER
from annotations.models import Prediction, Review, Run
from annotations.services.review import assignments_create
from annotations.services.triage import benchmark_triage
from tests.browser.conftest import nav, screenshot
from tests.factories import make_benchmark, make_item, make_personas
from tests.triage.helpers import FINDINGS, texture_jpeg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _benchmark():
    benchmark = make_benchmark("endo-triage", family="endobench")
    items = []
    for index in range(12):
        options = FINDINGS[index % 8 : index % 8 + 4]
        items.append(
            make_item(
                benchmark,
                index=index + 1,
                image=texture_jpeg(300 + index, size=480),
                question=f"Which finding is visible in frame {index + 1}?",
                options=options,
                answer="A",
                task="lesion" if index % 2 else "anatomy",
                split="test" if index % 4 == 0 else "dev",
                extra={"gt": options[0]},
            )
        )
    items[2].extra = {"gt": items[2].options[2]}  # gt names option C, the answer says A
    items[2].save()
    items[5].options = [items[5].options[0], "N/A", *items[5].options[2:]]
    items[5].save()
    _three_models_say_b_on(benchmark, items, wrong=items[7])
    return benchmark, items


def _three_models_say_b_on(benchmark, items, wrong):
    for number in range(3):
        run = Run.objects.create(
            benchmark=benchmark, kind="model", label=f"model-{number + 1}", status="done"
        )
        for k, item in enumerate(items):
            letter = "B" if item == wrong or (k + number) % 6 == 0 else "A"
            Prediction.objects.create(run=run, item=item, extracted=letter, hit=letter == "A")


def test_a_curator_filters_the_suspects_opens_one_and_reviews_it(page, live_server, login):
    people = make_personas()
    curator = people["curator"]
    curator.groups.add(Group.objects.get(name=REVIEWER))
    benchmark, items = _benchmark()
    assignments_create(benchmark=benchmark, reviewers=[curator, people["reviewer"]], per_item=2)
    benchmark_triage(benchmark=benchmark)

    login(curator.username)
    nav(page, "curate", "Triage")
    page.click("text=endo-triage")
    page.wait_for_selector(".suspect")
    first = page.locator(".suspect").first
    assert "#8" in first.locator("h3").inner_text()  # the item all three models contradict
    assert first.locator("table.votes tr.disagrees").count() == 3
    screenshot(page, "triage_page")

    page.select_option("select[name=reason]", "gt_mismatch")
    page.wait_for_function(
        "document.querySelectorAll('#results .suspect').length === 1"
        " && location.search.includes('gt_mismatch')"
    )
    suspect = page.locator(".suspect")
    assert "#3" in suspect.locator("h3").inner_text()
    assert "gt text ≠ answer option" in suspect.inner_text()
    # The sidebar follows the filter: its highlight moved from "All suspects" to the reason.
    assert (
        page.locator("#reason-nav li.selected [data-reason]").get_attribute("data-reason")
        == "gt_mismatch"
    )
    assert page.locator("#reason-nav .reason-all.selected").count() == 0
    screenshot(page, "triage_filtered")

    suspect.locator("a.review-link").click()
    page.wait_for_selector("html[data-review-keys=ready] [data-review-form]")
    assert page.url.endswith(f"/review/items/{items[2].pk}/")
    page.keyboard.press("3")  # reject
    page.keyboard.press("1")  # wrong answer
    screenshot(page, "triage_review")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('[data-progress]').innerText.includes('1 /')")
    review = Review.objects.get(item=items[2], reviewer=curator)
    assert (review.verdict, review.reason) == ("reject", "wrong_answer")
