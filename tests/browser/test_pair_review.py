from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotations.models import Item, Prediction, Review, Run, RunKind, RunStatus
from annotations.services.degrade import benchmark_degrade
from annotations.services.review import assignments_create
from tests.browser.conftest import screenshot
from tests.factories import make_personas
from tests.pairs.helpers import make_pair_benchmark

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pairs():
    people = make_personas()
    benchmark = make_pair_benchmark(size=320)
    benchmark_degrade(benchmark=benchmark, kinds="gaussian_noise", severities="mild,severe", seed=0)
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    twins = list(Item.objects.filter(clean_twin__isnull=False).order_by("source_index"))
    return people, benchmark, twins


def transforms(page) -> list[str]:
    return page.eval_on_selector_all("[data-pair-image]", "els => els.map(e => e.style.transform)")


def scale_of(transform: str) -> float:
    return float(re.search(r"scale\(([\d.]+)\)", transform).group(1))


def translate_of(transform: str) -> tuple[float, float]:
    x, y = re.search(r"translate\((-?[\d.]+)px, (-?[\d.]+)px\)", transform).groups()
    return float(x), float(y)


def open_first_pair(page, live_server):
    page.goto(live_server.url + "/pairs/")
    page.click("text=Review the next pair")
    page.wait_for_selector("[data-pair][data-ready='1']")


def test_zoom_and_pan_on_one_side_moves_the_other(page, live_server, login, pairs):
    people, _benchmark, twins = pairs
    login(people["reviewer"].username)
    open_first_pair(page, live_server)
    assert page.url.endswith(f"/pairs/{twins[0].pk}/")
    before = transforms(page)
    assert before[0] == before[1]

    left = page.locator("[data-pair-pane][data-side='left']").bounding_box()
    page.mouse.move(left["x"] + left["width"] * 0.4, left["y"] + left["height"] * 0.45)
    page.mouse.wheel(0, -500)
    page.wait_for_function(
        "t => document.querySelector('[data-pair-image]').style.transform !== t", arg=before[0]
    )
    zoomed = transforms(page)
    assert zoomed[0] == zoomed[1]
    assert scale_of(zoomed[0]) > 1.5 * scale_of(before[0])

    right = page.locator("[data-pair-pane][data-side='right']").bounding_box()
    page.mouse.move(right["x"] + 200, right["y"] + 200)
    page.mouse.down()
    page.mouse.move(right["x"] + 120, right["y"] + 150, steps=4)
    page.mouse.up()
    panned = transforms(page)
    assert panned[0] == panned[1]
    (x0, y0), (x1, y1) = translate_of(zoomed[0]), translate_of(panned[0])
    assert (round(x1 - x0), round(y1 - y0)) == (-80, -50)

    page.keyboard.press("d")
    expect(page.locator("[data-diff-canvas]")).to_be_visible()
    expect(page.locator("[data-diff-toggle]")).to_have_attribute("aria-pressed", "true")
    canvas_transform = page.eval_on_selector("[data-diff-canvas]", "c => c.style.transform")
    assert canvas_transform == panned[0]  # the difference follows the same zoom and pan
    screenshot(page, "pair_difference")
    page.keyboard.press("d")
    expect(page.locator("[data-diff-canvas]")).to_be_hidden()
    page.keyboard.press("0")
    screenshot(page, "pair_review")


def test_a_reviewer_answers_by_keyboard_then_by_clicks_and_sees_the_next_pair(
    page, live_server, login, pairs
):
    people, _benchmark, twins = pairs
    login(people["reviewer"].username)
    open_first_pair(page, live_server)
    for key in ("y", "4", "w"):
        page.keyboard.press(key)
    assert page.locator(".seg:has(input[name=realism][value='4'])").evaluate(
        "el => getComputedStyle(el).backgroundColor"
    ) != page.locator(".seg:has(input[name=realism][value='3'])").evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/pairs/{twins[1].pk}/")
    page.wait_for_selector("[data-pair][data-ready='1']")
    assert "Pair review saved." in page.locator(".messages").inner_text()
    assert page.locator("[data-progress]").inner_text().startswith("1 / ")
    review = Review.objects.get(item=twins[0], reviewer=people["reviewer"])
    assert (review.answerable, review.realism, review.severity_judgement) == (True, 4, "right")

    page.click("label.seg:has(input[name=answerable][value=no])")
    page.click("label.seg:has(input[name=realism][value='2'])")
    page.click("label.seg:has(input[name=severity_judgement][value=too_strong])")
    page.fill("#id_comment", "Noise hides the lesion margin.")
    screenshot(page, "pair_review_answered")
    page.click("[data-pair-submit]")
    page.wait_for_url(f"**/pairs/{twins[2].pk}/")
    second = Review.objects.get(item=twins[1], reviewer=people["reviewer"])
    assert (second.verdict, second.reason, second.realism) == ("reject", "unanswerable", 2)
    assert second.comment == "Noise hides the lesion margin."


def test_blinded_mode_asks_which_side_is_degraded_first(page, live_server, login, pairs):
    people, _benchmark, twins = pairs
    login(people["reviewer2"].username)
    page.goto(live_server.url + "/pairs/")
    page.click("text=Turn blinded mode on")
    open_first_pair(page, live_server)
    assert "Which image is degraded?" in page.inner_text(".pair-panel")
    assert page.locator(".pane-label", has_text="Degraded").count() == 0
    screenshot(page, "pair_review_blinded")
    for key in ("ArrowLeft", "y", "5", "w", "Enter"):
        page.keyboard.press(key)
    page.wait_for_url(f"**/pairs/{twins[1].pk}/")
    assert "Saved." in page.locator(".messages").inner_text()
    assert Review.objects.get(item=twins[0]).identified_degraded_side == "left"


def test_the_twin_shows_on_the_robustness_page_once_a_run_exists(page, live_server, login, pairs):
    people, benchmark, twins = pairs
    run = Run.objects.create(
        benchmark=benchmark, kind=RunKind.MODEL, label="gpt-mini", status=RunStatus.DONE
    )
    for item in Item.objects.filter(benchmark=benchmark):
        hit = item.degradation_severity != "severe" or item.modality != "CT"
        Prediction.objects.create(run=run, item=item, extracted="A", hit=hit)
    login(people["curator"].username)
    page.goto(live_server.url + "/pairs/")
    page.click("tr:has-text('medq') >> text=Robustness")
    card = page.locator(f"[data-run='{run.pk}']")
    assert "gpt-mini" in card.inner_text()
    kind_chart = card.locator("[data-chart='kind']")
    assert kind_chart.locator("[data-row='gaussian_noise']").count() == 1
    assert (
        kind_chart.locator("[data-row='gaussian_noise'] [data-drop]").text_content() == "-25.0 pp"
    )
    screenshot(page, "robustness")


def test_a_curator_sees_what_degradation_would_start_from(page, live_server, login, pairs):
    people, _benchmark, _twins = pairs
    login(people["curator"].username)
    page.goto(live_server.url + "/pairs/")
    page.click("tr:has-text('medq') >> text=Degrade")
    page.click("[data-check-none]")
    expect(page.locator("input[name=kinds]:checked")).to_have_count(0)
    page.click("[data-check-all]")
    expect(page.locator("input[name=kinds]:checked")).to_have_count(18)
    # The twins made so far, by kind: named in words, not by their raw id.
    aside = page.inner_text("aside")
    assert "Gaussian noise" in aside and "gaussian_noise" not in aside
    screenshot(page, "degrade_form")
