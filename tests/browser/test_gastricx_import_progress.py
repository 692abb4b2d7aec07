"""A curator watches a parallel Gastric-X import on its job page: cases stored so far, and each
case's part with its state, until the page says the import is done."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotations.models import Job, JobChunk
from tests.browser.conftest import nav, screenshot
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CASES = ("GX-0001", "GX-0002", "GX-0003", "GX-0004")


def test_the_job_page_shows_the_cases_of_a_parallel_import(page, live_server, login):
    make_personas()
    job = Job.objects.create(
        kind="import", status="running", total=4, done=2, attempts=1,
        params={"name": "gx-big", "family": "gastricx", "file_name": "cases.zip"},
        heartbeat_at=timezone.now(),
    )  # fmt: skip
    states = ("done", "done", "running", "queued")
    for number, (case_id, state) in enumerate(zip(CASES, states, strict=True)):
        JobChunk.objects.create(job=job, number=number, status=state, total=1,
                                done=int(state == "done"), attempts=int(state != "queued"),
                                params={"case_id": case_id, "row": number + 1})  # fmt: skip
    login("dave")
    nav(page, "admin", "Jobs")
    page.click(f"a[href$='/jobs/{job.pk}/']")

    progress = page.locator("#job-progress")
    expect(progress).to_contain_text("Cases stored: 2 / 4")
    for case_id in CASES:
        expect(page.locator(".job-chunks td.part", has_text=case_id)).to_have_count(1)
    screenshot(page, "gastricx-import-progress")
