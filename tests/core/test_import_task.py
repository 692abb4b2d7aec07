"""The import task under the recovery framework: a replaced worker can neither finish the job
nor touch its successor's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.models import Benchmark, Job, JobStatus
from annotations.services.images import import_work_dir
from annotations.services.recovery import LeaseLost, lease_claim
from annotations.tasks.imports import _run, benchmark_import_task
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, jpeg_bytes, write_tsv

pytestmark = pytest.mark.django_db


def _job(tmp_path, settings) -> Job:
    settings.MEDIA_ROOT = tmp_path / "media"
    upload = Path(settings.MEDIA_ROOT) / "uploads" / "u" / "upload.tsv"
    upload.parent.mkdir(parents=True)
    write_tsv(upload, [ENDO_HEADER, endo_row(1, b64(jpeg_bytes("red")))])
    return Job.objects.create(
        kind="import", params={"path": str(upload), "family": "endobench", "name": "endo"}
    )


def test_a_replaced_worker_commits_nothing_and_leaves_its_successors_files(tmp_path, settings):
    job = _job(tmp_path, settings)
    queued = Job.objects.filter(status=JobStatus.QUEUED)
    old = lease_claim(queued, job.pk, status=JobStatus.RUNNING)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)  # the reaper, meanwhile
    lease_claim(queued, job.pk, status=JobStatus.RUNNING)
    successor = import_work_dir(f"job-{job.pk}-2")
    successor.mkdir(parents=True)
    (successor / "staged.jpg").write_bytes(b"the successor's")

    with pytest.raises(LeaseLost):
        _run(job, old)

    assert not Benchmark.objects.exists()
    assert (successor / "staged.jpg").exists()
    assert not import_work_dir(f"job-{job.pk}-1").exists()
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING  # the successor's to end


def test_a_redelivered_task_of_a_finished_job_does_nothing(tmp_path, settings):
    job = _job(tmp_path, settings)
    benchmark_import_task(job.pk)
    benchmark_import_task(job.pk)
    job.refresh_from_db()
    assert (job.status, job.attempts, Benchmark.objects.count()) == (JobStatus.DONE, 1, 1)
