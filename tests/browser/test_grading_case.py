"""A curator names the grader of a session of a model's CT reports against the reference; the
grader grades a report with its case in view (the four CT phases, the endoscopy, the indicators,
the other reports) and scores it from the page, never learning which model wrote which side."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Grade, Item
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.browser.conftest import docs_picture, screenshot
from tests.cases.builders import write_case
from tests.factories import make_personas
from tests.runs.helpers import make_report_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODEL_REPORT = "Irregular wall thickening of the gastric body; two perigastric nodes."
SECRETS = ("hidden-alpha", "model-hidden-alpha", "endpoint-of-hidden-alpha")


def test_a_grader_grades_a_ct_report_with_its_ct_in_view(page, live_server, login, tmp_path):
    people = make_personas()
    write_case(tmp_path / "cases", "GX-GRADE-1")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-grade", user=people["curator"])
    report = Item.objects.get(benchmark=benchmark, kind="open", category="ct")
    alpha = make_report_run(benchmark, [report], label="hidden-alpha", texts=[MODEL_REPORT])
    everyone = [people["reviewer"], people["reviewer2"]]
    assignments_create(benchmark=benchmark, reviewers=everyone, per_item=2)

    login(people["curator"].username)
    page.goto(f"{live_server.url}/grading/")
    page.select_option("#id_task", "report_generation")
    page.select_option("#id_run_a", str(alpha.pk))
    page.select_option("#id_run_b", "")  # against the reference reports
    page.get_by_label(people["reviewer"].username, exact=True).check()
    page.click("#new-session-form button[type=submit]")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    page.context.clear_cookies()

    # bob was not named: the session is not his to grade.
    login(people["reviewer2"].username)
    page.goto(f"{live_server.url}/grading/")
    expect(page.locator("table.sessions")).to_have_count(0)
    page.context.clear_cookies()

    login(people["reviewer"].username)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.set_default_timeout(120_000)  # four phases of voxels on a shared machine
    page.goto(f"{live_server.url}/grading/")
    page.click("table.sessions a.button")
    page.wait_for_selector("#grade-form[data-keyboard=ready]")
    page.wait_for_selector("[data-grade-case] #ct-viewer[data-loaded=true]")
    expect(page.locator("[data-grade-case] .ct-canvas:visible")).to_have_count(4)
    expect(page.locator("[data-grade-endoscopy] img")).to_be_visible()
    expect(page.locator("[data-grade-case] [data-out-of-range]").first).to_be_visible()
    reports = page.locator("[data-grade-case] [data-case-reports]")
    expect(reports).to_contain_text("Adenocarcinoma of the gastric body")  # diagnostic
    expect(reports).to_contain_text("Ulcerated mass in the gastric body.")  # endoscopy
    # The reference CT report is one of the two sides, never shown apart from them.
    expect(reports.locator("[data-report=ct]")).to_have_count(0)
    expect(page.get_by_text("No image.")).to_have_count(0)
    sides = page.locator(".answer-card .answer-text").all_inner_texts()
    assert sorted(sides) == sorted([MODEL_REPORT, report.reference])
    html = page.evaluate("document.documentElement.outerHTML")
    assert not [secret for secret in SECRETS if secret in html]

    # Grading keys score the rubric; inside the case the same digits are the CT's windows.
    page.keyboard.press("a")
    page.keyboard.press("2")  # A · correct findings: 2, and the cursor says where it went
    expect(page.locator("input[name=left_correct_findings][value='2']")).to_be_checked()
    expect(page.locator("[data-grade-status]")).to_contain_text("Next row")
    page.locator(".ct-viewport[data-phase=venous] .ct-stage").click()
    page.keyboard.press("3")
    expect(page.locator("#ct-wl")).to_contain_text("Lung")
    expect(page.locator("input[name=left_omissions]:checked")).to_have_count(0)
    page.keyboard.press("Escape")
    page.locator("label:has(input[name=left_overall][value='4'])").click()
    page.locator("label:has(input[name=right_overall][value='3'])").click()
    shutil.copyfile(screenshot(page, "grading_ct_report"), docs_picture("grading-ct-report.png"))
    page.click("#grade-form button[type=submit]")
    expect(page.get_by_text("Nothing left to grade in this session")).to_be_visible()

    grade = Grade.objects.get(grader=people["reviewer"])
    assert grade.item == report and grade.preference == "left"
    assert grade.rubric["left"] == {"correct_findings": 2, "overall": 4}
    assert grade.rubric["right"] == {"overall": 3}
