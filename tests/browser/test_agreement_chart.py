"""The agreement chart draws a negative Krippendorff's alpha left of zero (issue 21)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.browser.conftest import screenshot
from tests.factories import make_personas
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Three disagreements and one agreement: alpha = -0.4 over the verdicts.
PLAN = [(ACCEPT, REJECT), (REJECT, ACCEPT), (ACCEPT, REJECT), (ACCEPT, ACCEPT)]


def test_a_negative_alpha_is_drawn_left_of_the_zero_line(page, login, live_server):
    people = make_personas()
    benchmark, items = assigned_benchmark(people, items=len(PLAN), name="disagree")
    for item, (first, second) in zip(items, PLAN, strict=True):
        both_review(item, people, first, second)

    # The page imports the whole URL configuration on first use: done here, not within the
    # browser's 15 s budget for its first page on a loaded machine.
    Client().get(reverse("agreement", args=[benchmark.name]))
    login("dave")
    page.goto(f"{live_server.url}/benchmarks/{benchmark.name}/agreement/")

    chart = page.locator("figure.chart svg").first
    zero = chart.locator("text.tick", has_text=re.compile(r"^0$"))
    alpha = chart.locator("rect.alpha").first
    assert chart.locator("text.tick", has_text=re.compile(r"^-0\.5$")).count() == 1
    assert alpha.bounding_box()["x"] + 2 < zero.bounding_box()["x"]
    screenshot(page, "agreement_negative_alpha")
