"""A curator reads a Gastric-X run's page: the scores of each task with their intervals, the
confusion matrix, the prompts per task; downloads the scores and predictions the standalone
scorer reads; and the leaderboard of one task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotations.selectors.cases import memmaps
from annotations.services import runs as run_services
from tests.browser.conftest import screenshot
from tests.factories import make_personas
from tests.runs.gastric_tasks import chat_script, embeddings_script, make_task_benchmark
from tests.runs.helpers import make_endpoint
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_run_page_shows_the_scores_of_every_task(page, live_server, login, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    memmaps.clear()
    people = make_personas()
    made = make_task_benchmark("gx-run-page")
    with FakeOpenAIServer(chat_script(made), embeddings=embeddings_script(made)) as server:
        endpoint = make_endpoint(server.base_url, name="vlm-page")
        run = run_services.run_create(benchmark=made.benchmark, endpoint=endpoint, enqueue=False)
        run_services.run_execute(run_id=run.pk, poll_seconds=0.05)

    login(people["curator"].username)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    cards = page.locator(".task-card")
    assert cards.count() == 5
    classification = page.locator('.task-card[data-task="classification"]')
    assert "0.750" in classification.inner_text()
    assert page.locator('[data-testid="confusion-t"] td.diag').count() == 4
    page.locator(".task-prompts summary").click()
    expect(page.locator('pre.prompt[data-task="localization"]')).to_be_visible()
    screenshot(page, "run_tasks")
    # The file the standalone scorer reads, downloaded as a curator does.
    results = page.get_by_role("link", name="Scores and predictions (JSON)")
    results.scroll_into_view_if_needed()
    screenshot(page, "run_results_link")
    with page.expect_download() as download:
        results.click()
    assert download.value.suggested_filename == f"run-{run.pk}-results.json"
    document = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert len(document["predictions"]) == run.total
    assert document["tasks"]["classification"]["accuracy"]["value"] == 0.75
    page.goto(f"{live_server.url}/benchmarks/gx-run-page/leaderboard/?task=retrieval")
    assert page.locator('[data-testid="task-leaderboard"] tbody tr').count() == 1
    screenshot(page, "leaderboard_retrieval")
