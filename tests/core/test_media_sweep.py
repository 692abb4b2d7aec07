"""No patient file outlives its job: the media sweep (issue 29). The whole-worker kill right
after an import is marked done is in tests/integration/test_import_recovery.py."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from annotations.models import Job, JobStatus
from annotations.services.errors import DomainError
from annotations.services.jobs import job_create, job_retry
from annotations.services.media_sweep import media_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.UPLOAD_EXPIRY_HOURS = 24
    return settings.MEDIA_ROOT


def _upload(token: str) -> Path:
    from django.conf import settings

    folder = Path(settings.MEDIA_ROOT) / "uploads" / token
    folder.mkdir(parents=True)
    path = folder / "upload.zip"
    path.write_bytes(b"PatientName^Raw")
    return path


def _import_job(path: Path, status: str, **fields) -> Job:
    job = job_create(kind="import", params={"path": str(path), "family": "gastricx", "name": "x"})
    Job.objects.filter(pk=job.pk).update(status=status, **fields)
    return job


def _attempt(job: Job, attempt: int = 1) -> Path:
    from django.conf import settings

    folder = Path(settings.MEDIA_ROOT) / "imports" / f"job-{job.pk}-{attempt}" / "extracted"
    folder.mkdir(parents=True)
    (folder / "1.dcm").write_bytes(b"raw dicom")
    return folder.parent


def _age(path: Path, hours: float) -> None:
    then = time.time() - hours * 3600
    os.utime(path, (then, then))


def test_a_done_jobs_upload_and_attempt_folder_go_and_are_reported():
    upload = _upload("done")
    job = _import_job(upload, JobStatus.DONE, finished_at=timezone.now())
    attempt = _attempt(job)
    report = media_sweep()
    assert not upload.parent.exists() and not attempt.exists()
    assert sorted(report.removed) == [
        (f"imports/{attempt.name}", "job ended"),
        ("uploads/done", "job done"),
    ]


def test_an_open_jobs_files_stay():
    for status in (JobStatus.QUEUED, JobStatus.RUNNING):
        upload = _upload(status)
        job = _import_job(upload, status)
        attempt = _attempt(job)
        assert media_sweep().removed == []
        assert upload.is_file() and attempt.is_dir()


def test_a_failed_jobs_upload_is_kept_for_a_retry_until_it_expires():
    upload = _upload("failed")
    job = _import_job(upload, JobStatus.FAILED, finished_at=timezone.now())
    media_sweep()
    assert upload.is_file()
    Job.objects.filter(pk=job.pk).update(finished_at=timezone.now() - timedelta(hours=25))
    assert media_sweep().removed == [("uploads/failed", "expired")]
    assert not upload.parent.exists()
    with pytest.raises(DomainError) as refused:
        job_retry(job=Job.objects.get(pk=job.pk))
    assert refused.value.code == "upload_gone"


def test_files_no_job_names_expire(settings):
    kept_upload = _upload("form-error")  # kept across a form error, not yet a job
    old_upload = _upload("abandoned")
    _age(old_upload.parent, 30)
    media = Path(settings.MEDIA_ROOT)
    stray = media / "imports" / "run-abc"
    stray.mkdir(parents=True)
    _age(stray, 30)
    orphan_volumes = media / "volumes" / "gx-dead"
    (orphan_volumes / "c1").mkdir(parents=True)
    _age(orphan_volumes, 30)
    removed = dict(media_sweep().removed)
    assert removed == {
        "uploads/abandoned": "expired",
        "imports/run-abc": "expired",
        "volumes/gx-dead": "no volume uses it",
    }
    assert kept_upload.is_file()
