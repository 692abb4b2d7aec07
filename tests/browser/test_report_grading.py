"""A curator sets two models' generated reports side by side; a grader grades two of them blind
(no model name anywhere in the page, before or after its scripts ran); the ratings page shows
the report rubric, the graders' agreement and the metrics' agreement."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotations.models import Grade
from annotations.services.review import assignments_create
from tests.browser.conftest import screenshot
from tests.factories import make_benchmark, make_item, make_personas
from tests.runs.helpers import make_report_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REFERENCES = [
    "The antral wall is thickened with an ulcerated mass. No enlarged lymph nodes.",
    "A 2 cm lesion at the cardia with perigastric lymph nodes. The liver is normal.",
]
ALPHA = [
    "The antral wall is thickened with an ulcerated mass. No lymph nodes.",
    "A 2 cm lesion at the cardia with lymph nodes. Normal liver.",
]
BETA = ["Normal stomach.", "The liver is normal."]
SECRETS = ("hidden-alpha", "hidden-beta", "model-hidden", "endpoint-of-hidden")


def assert_blind(page) -> None:
    html = page.evaluate("document.documentElement.outerHTML")
    for secret in SECRETS:
        assert secret not in html


def test_a_grader_grades_two_generated_reports_blind(page, live_server, login):
    people = make_personas()
    benchmark = make_benchmark("gx-report-demo", family="gastricx")
    items = [
        make_item(
            benchmark,
            index=n + 1,
            kind="open",
            question=f"Write the CT report of case {n + 1}.",
            options=[],
            answer="",
            reference=reference,
            target={"report": "ct"},
        )
        for n, reference in enumerate(REFERENCES)
    ]
    alpha = make_report_run(benchmark, items, label="hidden-alpha", texts=ALPHA)
    beta = make_report_run(benchmark, items, label="hidden-beta", texts=BETA)
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"]], per_item=1)

    login(people["curator"].username)
    page.goto(f"{live_server.url}/grading/")
    page.select_option("#id_task", "report_generation")
    page.select_option("#id_run_a", str(alpha.pk))
    page.select_option("#id_run_b", str(beta.pk))
    page.get_by_label(people["reviewer"].username, exact=True).check()  # the grader
    page.click("#new-session-form button[type=submit]")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    page.click("text=Log out")
    page.wait_for_url(re.compile(r".*/login/.*"))

    login(people["reviewer"].username)
    page.goto(f"{live_server.url}/grading/")
    assert_blind(page)
    page.click("table.sessions a.button")
    page.wait_for_selector("#grade-form[data-keyboard=ready]")
    assert_blind(page)
    assert page.locator(".report-text").count() == 3  # the reference and the two reports
    assert page.get_by_text(ALPHA[0]).is_visible()
    assert page.get_by_text(BETA[0]).is_visible()
    # Keyboard: the rubric rows of the left report, then the right one; "a" prefers A.
    for key in ("2", "1", "0", "4", "0", "3", "2", "1", "a"):
        page.keyboard.press(key)
    screenshot(page, "report_grading")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=1 of 2 graded")
    page.wait_for_selector("#grade-form[data-keyboard=ready]")
    assert_blind(page)
    # The second report by mouse.
    page.locator('[data-field="left_overall"] label.score', has_text="3").click()
    page.locator('[data-field="right_overall"] label.score', has_text="3").click()
    page.locator("label.pref[data-key=t]").click()
    page.click("button.save")
    page.wait_for_selector("text=Nothing left to grade")

    first, second = Grade.objects.order_by("pk")
    assert first.rubric == {
        "left": {"correct_findings": 2, "omissions": 1, "hallucinations": 0, "overall": 4},
        "right": {"correct_findings": 0, "omissions": 3, "hallucinations": 2, "overall": 1},
    }
    assert first.preference == "left"
    assert second.preference == "tie"
    assert second.rubric == {"left": {"overall": 3}, "right": {"overall": 3}}
    page.click("text=Log out")
    page.wait_for_url(re.compile(r".*/login/.*"))

    login(people["curator"].username)
    page.goto(f"{live_server.url}/grading/ratings/?task=report_generation")
    assert page.locator("table.ratings tbody tr").count() == 2
    assert page.locator("[data-testid=report-agreement]").is_visible()
    screenshot(page, "report_ratings")
