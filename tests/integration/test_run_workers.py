"""Two real workers share one run, chunk by chunk, on Redis and on the file-system broker.

No timing is asserted (the speed-up is measured by `bench/run_throughput.py --workers 1,2`);
what makes two workers faster is: each claims chunks of its own, both keep `concurrency`
requests in flight at the same moment, and every item is still answered exactly once.

The endpoint holds its first answers until it has 2 × concurrency requests in flight (or a
minute has passed): both workers must be answering a chunk at once for the gate to open early,
whichever starts first, so the peak is reached however the machine schedules them.
"""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest

from annotations.models import Prediction, Run, RunChunk, RunStatus
from annotations.services import runs as run_services
from tests.integration.conftest import wait_for
from tests.runs.helpers import make_endpoint, make_run_benchmark
from tests.support.fake_openai import FakeOpenAIServer, Reply, prompt_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ITEMS = 64
CONCURRENCY = 2
WORKER_ARGS = ("--pool", "threads", "--concurrency", "1")  # one chunk at a time per worker


class GatedEndpoint:
    """Answers 'A' after `latency`; the first answers wait until `gate_at` requests are in
    flight together."""

    def __init__(self, gate_at: int, latency: float = 0.1) -> None:
        self.gate_at = gate_at
        self.latency = latency
        self.opened = threading.Event()
        self.server = FakeOpenAIServer(self.answer)

    def answer(self, request_json: dict, attempt_no: int) -> Reply:
        if self.server.in_flight >= self.gate_at:
            self.opened.set()
        self.opened.wait(timeout=60)
        return Reply(text="A", delay=self.latency)


def test_two_workers_answer_chunks_of_one_run_side_by_side(broker, celery_worker_process):
    benchmark, items = make_run_benchmark(ITEMS)
    endpoint = GatedEndpoint(gate_at=2 * CONCURRENCY)
    with endpoint.server as server:
        run = run_services.run_create(
            benchmark=benchmark,
            endpoint=make_endpoint(server.base_url),
            concurrency=CONCURRENCY,
        )  # autocommit: one task per chunk is sent at once
        chunks = RunChunk.objects.filter(run=run).count()
        assert chunks >= 4
        for _ in range(2):
            celery_worker_process(*WORKER_ARGS, env=broker.worker_env())
        wait_for(lambda: Run.objects.filter(pk=run.pk, status=RunStatus.DONE).exists(), timeout=180)
        peak = server.max_in_flight
        asked = Counter(
            int(re.search(r"frame (\d+)\?", prompt_text(body)).group(1)) for body in server.requests
        )

    assert endpoint.opened.is_set()
    assert peak == 2 * CONCURRENCY  # both workers at once, each within its concurrency
    assert asked == Counter(item.source_index for item in items)  # every item asked once
    per_item = Counter(Prediction.objects.filter(run=run).values_list("item_id", flat=True))
    assert sorted(per_item) == sorted(item.pk for item in items)
    assert set(per_item.values()) == {1}
    run_chunks = RunChunk.objects.filter(run=run)
    assert set(run_chunks.values_list("status", flat=True)) == {RunStatus.DONE}
    assert set(run_chunks.values_list("attempts", flat=True)) == {1}  # each claimed once
    run.refresh_from_db()
    assert (run.completed, run.failed, run.summary["overall"]["n"]) == (ITEMS, 0, ITEMS)
