"""The foundation on real services: PostgreSQL, Redis and a Celery worker process."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotations.models import Benchmark, Item, Job, JobStatus
from annotations.services.jobs import job_create
from annotations.tasks.imports import benchmark_import_task
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, jpeg_bytes, write_tsv
from tests.integration.conftest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def upload(rows) -> Path:
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "test"
    folder.mkdir(parents=True, exist_ok=True)
    return write_tsv(folder / "upload.tsv", rows)


def test_the_database_is_postgresql():
    assert connection.vendor == "postgresql"


def test_a_worker_imports_a_benchmark_queued_through_redis(celery_worker_process):
    rows = [ENDO_HEADER] + [
        endo_row(i, b64(jpeg_bytes((i * 40 % 255, 60, 90)))) for i in range(1, 6)
    ]
    job = job_create(
        kind="import", params={"path": str(upload(rows)), "family": "endobench", "name": "endo-pg"}
    )
    celery_worker_process()
    benchmark_import_task.delay(job.id)

    job = wait_for(
        lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.DONE, JobStatus.FAILED]).first()
    )
    assert job.status == JobStatus.DONE, job.message
    assert (job.result["benchmark"], job.result["items"]) == ("endo-pg", 5)
    assert job.result["warnings_total"] == 0
    assert Item.objects.filter(benchmark__name="endo-pg").count() == 5


def test_a_bad_file_fails_the_job_and_stores_nothing(celery_worker_process):
    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_bytes())), endo_row(2, "not base64 at all!")]
    job = job_create(
        kind="import", params={"path": str(upload(rows)), "family": "endobench", "name": "endo-bad"}
    )
    celery_worker_process()
    benchmark_import_task.delay(job.id)

    job = wait_for(
        lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.DONE, JobStatus.FAILED]).first()
    )
    assert job.status == JobStatus.FAILED
    assert any((p["row"], p["column"]) == (2, "image") for p in job.result["problems"])
    assert not Benchmark.objects.filter(name="endo-bad").exists()
