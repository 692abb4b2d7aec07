"""A curator starts baseline runs from the web, a reviewer grades answers blind, ratings appear.

No Celery worker runs inside pytest: the enqueue is replaced by what a worker would do, the real
task function called in a background thread (with its own database connection). Everything else
- the form, the run service, the htmx progress polling, grading, ratings - is the real thing.

The test database is SQLite in memory with a shared cache, where a reader meets "table is
locked" instead of waiting while another connection writes (a file database in WAL mode, as in
production, lets readers go on). So the "worker" thread and the live server's requests take
turns through one lock: a page may still show the run queued and poll until it is done.
"""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from playwright.sync_api import expect

from annotations.models import Grade, Run, RunStatus
from annotations.services.review import assignments_create
from annotations.tasks import runs as run_tasks
from tests.browser.conftest import screenshot
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker_thread(monkeypatch, live_server):
    """Run each enqueued task in a thread, as a worker process would, and wait for them at the end."""
    threads: list[threading.Thread] = []
    turns = threading.Lock()
    server = live_server.thread.httpd
    app = server.get_app()

    def app_taking_turns(environ, start_response):
        with turns:
            return app(environ, start_response)

    def work(task, row_id: int) -> None:
        try:
            with turns:
                task(row_id)  # the task body, exactly as a worker calls it
        finally:
            connection.close()

    def delay_of(task):
        def delay(row_id: int) -> None:
            thread = threading.Thread(target=work, args=(task, row_id), daemon=True)
            threads.append(thread)
            thread.start()

        return delay

    # A run is sent as one task per chunk (and the reaper's task for the run).
    for task in (run_tasks.run_chunk_execute, run_tasks.run_execute):
        monkeypatch.setattr(task, "delay", delay_of(task))
    server.set_app(app_taking_turns)
    yield
    server.set_app(app)
    for thread in threads:
        thread.join(timeout=30)


def start_baseline_run(page, live_server, baseline: str) -> None:
    page.goto(f"{live_server.url}/runs/")
    page.select_option("#id_source", f"baseline:{baseline}")
    page.select_option("#id_benchmark", "endo-demo")
    page.fill("#id_concurrency", "2")
    page.click("#new-run-form button[type=submit]")
    # The progress bar polls every second until the run ends, then the page reloads with scores.
    page.wait_for_selector("[data-status=done]")
    assert page.locator("[data-testid=run-percent]").inner_text() == "100%"
    assert page.locator(".big-number").is_visible()
    # Every chunk of the run is shown done, and VLMEvalKit's table is printed under the scores.
    chunks = page.locator(".chunk-strip .chunk")
    assert chunks.count() >= 1
    assert chunks.count() == page.locator(".chunk-strip .chunk-done").count()
    assert page.locator("[data-testid=vlmeval-table]").is_visible()
    assert "e8e78f0" in page.locator("[data-testid=vlmeval-commit]").inner_text()


def logout(page) -> None:
    page.click("text=Log out")
    page.wait_for_url(re.compile(r".*/login/.*"))


def test_baseline_runs_blind_grading_and_ratings(page, live_server, login, worker_thread):
    people = make_personas()
    benchmark = make_benchmark("endo-demo", family="endobench")
    for index in range(1, 5):
        make_item(
            benchmark,
            index=index,
            answer="ABCD"[index % 4],
            scene="colonoscopy" if index % 2 else "gastroscopy",
            image=jpeg_bytes(color=(150 + index * 20, 70, 60), size=(640, 480)),
        )

    login(people["curator"].username)
    start_baseline_run(page, live_server, "first")
    screenshot(page, "run_detail")
    start_baseline_run(page, live_server, "random")
    first, second = Run.objects.order_by("pk")
    assert {first.status, second.status} == {RunStatus.DONE}

    page.goto(f"{live_server.url}/runs/")
    screenshot(page, "runs_list")
    page.goto(f"{live_server.url}/benchmarks/endo-demo/leaderboard/")
    assert page.locator("table.leaderboard tbody tr").count() == 2
    screenshot(page, "leaderboard")

    page.goto(f"{live_server.url}/grading/")
    page.select_option("#id_run_a", str(first.pk))
    page.select_option("#id_run_b", str(second.pk))
    page.get_by_label(people["reviewer"].username, exact=True).check()  # the grader
    page.click("#new-session-form button[type=submit]")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    screenshot(page, "grading_sessions")
    logout(page)
    # The reviewer reviews this benchmark: its grading sessions are in their scope.
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"]], per_item=1)

    login(people["reviewer"].username)
    page.goto(f"{live_server.url}/grading/")
    assert "baseline-first" not in page.content()
    page.click("table.sessions a.button")
    page.wait_for_selector("#grade-form[data-keyboard=ready]")
    assert "baseline-" not in page.content()  # the runs' names never reach a grader
    for key in ("a", "2", "2", "1", "2", "0", "1", "1", "0"):
        page.keyboard.press(key)
    screenshot(page, "grading_item")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=1 of 4 graded")
    # The next item is a new page: its keys work once its script has run.
    page.wait_for_selector("#grade-form[data-keyboard=ready]")
    page.keyboard.press("w")
    page.keyboard.press("Enter")
    page.wait_for_selector("text=2 of 4 graded")

    grades = list(Grade.objects.order_by("pk"))
    assert [g.preference for g in grades] == ["left", "both_wrong"]
    assert grades[0].rubric == {
        "left": {"completeness": 2, "preciseness": 2, "consistency": 1, "accuracy": 2},
        "right": {"completeness": 0, "preciseness": 1, "consistency": 1, "accuracy": 0},
    }
    assert {grades[0].left_prediction.run_id, grades[0].right_prediction.run_id} == {
        first.pk,
        second.pk,
    }
    logout(page)

    login(people["curator"].username)
    page.goto(f"{live_server.url}/grading/ratings/")
    rows = page.locator("table.ratings tbody tr")
    assert rows.count() == 2
    assert "baseline-first" in rows.all_inner_texts()[0] + rows.all_inner_texts()[1]
    assert page.locator("svg.chart circle").count() == 2
    screenshot(page, "ratings")
