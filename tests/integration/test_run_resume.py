"""A real Celery worker is SIGKILLed (its whole process group) mid-run, on Redis and on the
file-system broker; a new worker, with the reaper's clock, finishes the run.

What is guaranteed and asserted: every item ends with exactly one Prediction; no item whose
prediction was stored before the kill is asked again; the only requests sent twice are those in
flight at the moment of the kill (at most `concurrency` of them: one chunk was being answered;
the next one may have been claimed, not yet asked), and their answers are stored once. A request cannot be "un-sent", so at-most-once requests are
impossible with a worker that may die at any instant; exactly-once *storage* is what the
database's unique constraint gives.

The dead worker's chunk is put back in the queue by the reaper once its heartbeat has been
quiet for JOB_STALE_SECONDS (4 s here), not by the broker: the file-system broker forgets a
message once a worker took it, and Redis would give it back only after its visibility timeout.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.conf import settings

from annotations.models import Prediction, Run, RunChunk, RunStatus
from annotations.services import runs as run_services
from tests.integration.conftest import beat_args, wait_for
from tests.runs.helpers import make_endpoint, make_run_benchmark
from tests.support.fake_openai import FakeOpenAIServer, answer_letter, prompt_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ITEMS = 30
CONCURRENCY = 2
WORKER_ARGS = ("--pool", "threads", "--concurrency", "1")


def _asked_index(request_json: dict) -> int:
    return int(re.search(r"frame (\d+)\?", prompt_text(request_json)).group(1))


def _forget_unacked_deliveries() -> None:
    # A delivery left unacked by an earlier killed test would be restored into this one.
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete("unacked", "unacked_index", "unacked_mutex")


def _stored(run: Run) -> int:
    return Prediction.objects.filter(run=run).count()


def _half_answered_chunk(run: Run) -> bool:
    running = RunChunk.objects.filter(run=run, status=RunStatus.RUNNING)
    return any(0 < chunk.completed <= chunk.size - 2 * CONCURRENCY for chunk in running)


def test_a_killed_worker_resumes_the_run_without_repeating_or_losing_a_prediction(
    broker, celery_worker_process, tmp_path
):
    if broker.name == "redis":
        _forget_unacked_deliveries()
    benchmark, items = make_run_benchmark(ITEMS)
    env = broker.worker_env(recovery=True)
    with FakeOpenAIServer(answer_letter("A"), latency=0.25) as server:
        run = run_services.run_create(
            benchmark=benchmark,
            endpoint=make_endpoint(server.base_url),
            concurrency=CONCURRENCY,
        )  # the chunks' tasks are sent at once: the test runs in autocommit
        assert RunChunk.objects.filter(run=run).count() > 2

        first = celery_worker_process(*WORKER_ARGS, env=env)
        # Kill while a chunk is half answered (a few rounds of 0.25 s still to go).
        wait_for(lambda: _half_answered_chunk(run) and _stored(run) >= 10, timeout=120)
        first.kill()
        stored_before_kill = set(
            Prediction.objects.filter(run=run).values_list("item__source_index", flat=True)
        )
        sent_before_kill = len(server.requests)
        assert len(stored_before_kill) < ITEMS, "the run finished before the kill"
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
        # The chunk being answered, and maybe the next one, claimed during its last round.
        orphaned = list(RunChunk.objects.filter(run=run, status=RunStatus.RUNNING))
        assert 1 <= len(orphaned) <= 2

        celery_worker_process(*WORKER_ARGS, *beat_args(tmp_path), env=env)
        wait_for(lambda: Run.objects.filter(pk=run.pk, status=RunStatus.DONE).exists(), timeout=180)
        asked = Counter(_asked_index(body) for body in server.requests)
        asked_after_kill = Counter(
            _asked_index(body) for body in server.requests[sent_before_kill:]
        )

    run.refresh_from_db()
    per_item = Counter(Prediction.objects.filter(run=run).values_list("item_id", flat=True))
    assert sorted(per_item) == sorted(item.pk for item in items)
    assert set(per_item.values()) == {1}
    assert (run.completed, run.failed, run.summary["overall"]["n"]) == (ITEMS, 0, ITEMS)

    assert set(asked) == {item.source_index for item in items}  # nothing lost
    assert not stored_before_kill & set(asked_after_kill)  # nothing stored was asked again
    repeated = {index for index, count in asked.items() if count > 1}
    assert len(repeated) <= CONCURRENCY  # only what was in flight at the kill
    assert max(asked.values()) <= 2

    for chunk in orphaned:  # the dead worker's chunks: requeued once, finished by the other
        chunk.refresh_from_db()
        assert (chunk.status, chunk.recoveries, chunk.attempts) == (RunStatus.DONE, 1, 2)
    chunks = RunChunk.objects.filter(run=run)
    assert set(chunks.values_list("status", flat=True)) == {RunStatus.DONE}
    assert sum(chunks.values_list("completed", flat=True)) == ITEMS
