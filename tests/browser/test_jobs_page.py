"""A curator finds stuck and failed background work on the Jobs page and retries a failed job."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotations.models import Job, JobChunk, Release, Run
from tests.browser.conftest import nav, screenshot
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _world():
    benchmark = make_benchmark("endo-jobs", family="endobench")
    for index in range(4):
        make_item(benchmark, index=index)
    now = timezone.now()
    Job.objects.create(
        kind="import", params={"name": "endo-jobs"}, status="done", total=4, done=4, attempts=1
    )
    Release.objects.create(
        benchmark=benchmark, name="endo-jobs", version="1", status="published", item_count=4,
        progress=4, attempts=1,
    )  # fmt: skip
    Run.objects.create(
        benchmark=benchmark, kind="model", label="qwen", status="running", total=4, completed=3,
        attempts=2, recoveries=1, heartbeat_at=now - timedelta(seconds=3),
    )  # fmt: skip
    failed = Job.objects.create(
        kind="degrade", benchmark=benchmark, status="failed", total=48, done=24, attempts=1,
        message="Part 2: Item #1: the engine ran out of memory",
        params={"kinds": ["gaussian_blur"], "severities": ["mild"], "seed": 0},
    )  # fmt: skip
    for number, status in enumerate(("done", "failed", "cancelled")):
        JobChunk.objects.create(job=failed, number=number, status=status, total=16,
                                done=16 if status == "done" else 8)  # fmt: skip
    stuck = Job.objects.create(
        kind="triage", benchmark=benchmark, status="running", total=2000, done=1200,
        attempts=1, heartbeat_at=now - timedelta(minutes=9),
    )  # fmt: skip
    for number in range(2):
        JobChunk.objects.create(job=stuck, number=number, status=("done", "running")[number],
                                total=1000, done=(1000, 200)[number], recoveries=number)  # fmt: skip
    return failed


def test_a_curator_sees_stuck_work_and_retries_a_failed_job(page, live_server, login):
    make_personas()
    failed = _world()
    login("dave")
    nav(page, "admin", "Jobs")
    page.wait_for_url("**/jobs/")
    stuck_row = page.locator("tr.is-stuck")
    assert stuck_row.count() == 1
    assert "Triage" in stuck_row.inner_text() and "Stuck" in stuck_row.inner_text()
    assert "recovered after a worker died ×1" in page.inner_text("table")
    screenshot(page, "jobs-page")

    page.click("nav.jobs-filters >> text=Failed")
    page.wait_for_url("**/jobs/?state=failed")
    rows = page.locator("table.jobs-table tbody tr")
    assert rows.count() == 1
    assert "the engine ran out of memory" in rows.first.inner_text()
    rows.first.locator("button", has_text="Retry").click()
    page.wait_for_load_state("networkidle")
    assert "Sent back to the queue" in page.inner_text(".messages")
    assert "No background work in this state." in page.inner_text("main")
    failed.refresh_from_db()
    assert failed.status == "queued"
    assert sorted(failed.chunks.values_list("status", flat=True)) == ["done", "queued", "queued"]

    page.goto(f"{live_server.url}/jobs/{failed.pk}/")
    assert "3 parts, shared by the workers" in page.inner_text("main")
    screenshot(page, "job-parts")
