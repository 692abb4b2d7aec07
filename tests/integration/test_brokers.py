"""The `broker` fixture really runs a test on each broker: a task sent by a service after commit
reaches a worker started on the same broker, and the reaper's clock (embedded beat) starts."""

from __future__ import annotations

import pytest

from annotations.models import Job, JobStatus
from annotations.services.triage import triage_schedule
from tests.factories import make_benchmark
from tests.integration.conftest import beat_args, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_a_task_sent_after_commit_is_run_by_a_worker_on_the_same_broker(
    broker, celery_worker_process, tmp_path
):
    benchmark = make_benchmark()
    job = triage_schedule(benchmark_id=benchmark.pk)  # autocommit: sent at once
    worker = celery_worker_process(*beat_args(tmp_path), env=broker.worker_env(recovery=True))
    wait_for(lambda: Job.objects.get(pk=job.pk).status == JobStatus.DONE, timeout=120)
    assert worker.process.poll() is None
    if broker.name == "filesystem":
        # The message went through the folder, not Redis: the queue folder is empty again.
        folder = tmp_path / "filesystem-broker" / "queue"
        assert list(folder.iterdir()) == []
