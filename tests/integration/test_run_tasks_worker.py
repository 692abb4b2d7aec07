"""Gastric-X's five tasks through a real Celery worker on PostgreSQL: every kind answered once
through the chunk tasks, boxes read from CT slices the worker renders, retrieval through the
embeddings endpoint, and the scores per task stored in the run's summary (PostgreSQL's JSON holds
no NaN: an undefined value must be null)."""

from __future__ import annotations

from collections import Counter

import pytest

from annotations.models import Prediction, Run, RunStatus
from annotations.services import runs as run_services
from tests.integration.conftest import wait_for
from tests.runs.gastric_tasks import chat_script, embeddings_script, make_task_benchmark
from tests.runs.helpers import make_endpoint
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_worker_answers_and_scores_every_task(celery_worker_process):
    made = make_task_benchmark("gx-worker")
    with FakeOpenAIServer(chat_script(made), embeddings=embeddings_script(made)) as server:
        run = run_services.run_create(
            benchmark=made.benchmark, endpoint=make_endpoint(server.base_url), concurrency=2
        )  # autocommit: the chunks' tasks are sent at once
        celery_worker_process("--pool", "threads", "--concurrency", "1")
        wait_for(lambda: Run.objects.filter(pk=run.pk, status=RunStatus.DONE).exists(), timeout=240)
    run.refresh_from_db()
    assert (run.completed, run.failed) == (12, 0)
    per_item = Counter(Prediction.objects.filter(run=run).values_list("item_id", flat=True))
    assert set(per_item.values()) == {1} and len(per_item) == 12
    tasks = run.summary["tasks"]
    assert tasks["classification"]["accuracy"]["value"] == 0.75
    assert tasks["localization"]["mean_iou"]["value"] == pytest.approx((0.375 + 0.75) / 2)
    assert tasks["retrieval"]["median_rank"]["value"] == 1.0
    ct = Prediction.objects.get(run=run, item=made.items["localization"][1])
    assert ct.box == [10, 10, 2, 30, 30, 6]
    ranks = Prediction.objects.filter(run=run, item__kind="retrieval").order_by(
        "item__source_index"
    )
    assert [p.report_to_case_rank for p in ranks] == [1, 1, 2]
