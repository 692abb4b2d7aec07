"""An import whose whole worker is killed mid-way is finished by a new worker, on both brokers,
with every item, no orphan file, and the images other benchmarks share left alone; a Gastric-X
import leaves no patient data behind."""

from __future__ import annotations

import io
import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from PIL import Image as PILImage

from annotations.models import (
    Benchmark,
    Case,
    Image,
    Item,
    ItemImage,
    Job,
    JobChunk,
    JobStatus,
    Volume,
)
from annotations.services.images import IMPORTS_FOLDER
from annotations.services.imports import benchmark_import
from annotations.services.jobs import job_create
from annotations.services.volume_files import VOLUMES_FOLDER
from annotations.tasks.imports import benchmark_import_task
from tests.cases.builders import PHI_STRINGS, write_case, zip_tree
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, write_tsv
from tests.integration.conftest import RECOVERY_ENV, beat_args, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ROWS = 800


def frame(number: int) -> bytes:
    """A distinct noisy frame of about 150 KB, so that the import takes a few seconds."""
    image = PILImage.effect_noise((360, 280), 60 + number % 30).convert("RGB")
    image.putpixel((0, 0), (number % 256, number // 256 % 256, 7))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()


def media_files(folder: str) -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return (
        {str(path.relative_to(root)) for path in (root / folder).rglob("*") if path.is_file()}
        if (root / folder).exists()
        else set()
    )


def finished_by_a_new_worker(job: Job, broker, celery_worker_process, tmp_path: Path) -> Job:
    """Start a worker with the reaper's clock and wait until it has ended `job`."""
    celery_worker_process(*beat_args(tmp_path), env=broker.worker_env(recovery=True))
    return wait_for(
        lambda: Job.objects.filter(
            pk=job.pk, status__in=[JobStatus.DONE, JobStatus.FAILED]
        ).first(),
        timeout=240,
    )


def test_a_killed_import_is_finished_by_a_new_worker_without_orphans(
    broker, celery_worker_process, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"  # read by the workers started below
    frames = [frame(number) for number in range(ROWS)]
    # Another benchmark already holds the first frames: their files must survive the recovery.
    shared = write_tsv(
        tmp_path / "shared.tsv", [ENDO_HEADER, *(endo_row(n + 1, b64(frames[n])) for n in range(3))]
    )
    benchmark_import(path=shared, family="endobench", name="shared")
    shared_files = media_files("images")
    assert len(shared_files) == 3

    folder = Path(settings.MEDIA_ROOT) / "uploads" / "killed"
    folder.mkdir(parents=True)
    upload = write_tsv(
        folder / "upload.tsv",
        [ENDO_HEADER, *(endo_row(n + 1, b64(data)) for n, data in enumerate(frames))],
    )
    job = job_create(
        kind="import", params={"path": str(upload), "family": "endobench", "name": "big"}
    )
    staging = Path(settings.MEDIA_ROOT) / IMPORTS_FOLDER / f"job-{job.pk}-1"

    first = celery_worker_process(env=broker.worker_env(recovery=True))
    benchmark_import_task.delay(job.pk)
    # Kill once the import is well under way: images staged, progress shown, nothing committed.
    wait_for(lambda: len(list(staging.glob("*.jpg"))) >= 100, timeout=120, interval=0.02)
    running = Job.objects.get(pk=job.pk)
    first.kill()
    assert running.status == JobStatus.RUNNING and running.result.get("stage") == "reading"
    assert not Benchmark.objects.filter(name="big").exists()

    job = finished_by_a_new_worker(job, broker, celery_worker_process, tmp_path)

    assert job.status == JobStatus.DONE, job.message
    # The staged links and the upload go right after the commit that ended the job.
    imports = Path(settings.MEDIA_ROOT) / IMPORTS_FOLDER
    wait_for(lambda: not list(imports.glob(f"job-{job.pk}-*")) and not folder.exists(), timeout=60)
    assert job.recoveries >= 1 and job.attempts >= 2
    assert job.result["items"] == ROWS
    assert Item.objects.filter(benchmark__name="big").count() == ROWS
    assert ItemImage.objects.filter(item__benchmark__name="big").count() == ROWS
    # Exactly one file per image row, the shared ones among them, and nothing staged left.
    stored = {image.file.name for image in Image.objects.all()}
    assert len(stored) == ROWS
    assert media_files("images") == stored
    assert shared_files <= stored
    assert media_files(IMPORTS_FOLDER) == set()


CASES = 16


def _gastricx_upload(tmp_path: Path, folder: Path) -> Path:
    tree = tmp_path / "tree"
    for number in range(CASES):
        write_case(tree, f"GX-K-{number:04d}", seed=number)
    return zip_tree(tree, folder / "cases.zip")


def _holds_phi(root: Path) -> list[str]:
    """Files under `root` naming the patient. The sweep may be removing folders meanwhile: a
    file or folder that vanishes during the walk holds nothing any more."""
    markers = [text.encode() for text in PHI_STRINGS]
    found = []
    for folder, _, names in os.walk(root):  # os.walk skips a folder that vanished
        for name in names:
            try:
                data = (Path(folder) / name).read_bytes()
            except FileNotFoundError:
                continue
            if any(marker in data for marker in markers):
                found.append(str(Path(folder) / name))
    return found


def test_a_killed_gastricx_import_leaves_no_patient_data_behind(
    broker, celery_worker_process, tmp_path, settings
):
    """The raw DICOM a killed attempt was extracting (names, ids, birth dates) and the volumes it
    was writing are removed by the next attempt, which imports every case."""
    settings.MEDIA_ROOT = tmp_path / "media"
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "killed-gx"
    folder.mkdir(parents=True)
    upload = _gastricx_upload(tmp_path, folder)
    job = job_create(
        kind="import", params={"path": str(upload), "family": "gastricx", "name": "gx-killed"}
    )
    staging = Path(settings.MEDIA_ROOT) / IMPORTS_FOLDER / f"job-{job.pk}-1"
    volumes = Path(settings.MEDIA_ROOT) / VOLUMES_FOLDER

    first = celery_worker_process(env=broker.worker_env(recovery=True))
    benchmark_import_task.delay(job.pk)
    # Kill once cases are being loaded: the zip extracted, some volumes written, nothing committed.
    # index.json is written last in a stored volume (imaging.chunks): two phases are whole.
    wait_for(lambda: len(list(volumes.rglob("index.json"))) >= 2, timeout=120, interval=0.02)
    first.kill()
    assert not Benchmark.objects.filter(name="gx-killed").exists()
    left = _holds_phi(staging)
    assert left, "the killed attempt had extracted raw DICOM into its own folder"
    assert _holds_phi(upload.parent)  # the upload itself, kept for the next attempt

    job = finished_by_a_new_worker(job, broker, celery_worker_process, tmp_path)

    assert job.status == JobStatus.DONE, job.message
    # A Gastric-X import runs a case per chunk: the case the killed worker held was recovered
    # and taken again by the new worker.
    recovered = JobChunk.objects.filter(job=job, recoveries__gte=1, attempts__gte=2)
    assert recovered.exists(), list(JobChunk.objects.filter(job=job).values("recoveries"))
    assert Case.objects.filter(benchmark__name="gx-killed").count() == CASES
    imports = Path(settings.MEDIA_ROOT) / IMPORTS_FOLDER
    wait_for(lambda: not list(imports.glob(f"job-{job.pk}-*")) and not folder.exists(), timeout=60)
    # Only the committed volumes folder is left, and nothing under MEDIA_ROOT names the patient.
    committed = {
        Path(path).parts[1] for path in Volume.objects.values_list("cache_path", flat=True)
    }
    assert {path.name for path in volumes.iterdir()} == committed
    assert _holds_phi(Path(settings.MEDIA_ROOT)) == []


@contextmanager
def _done_commit_held(lock: int):
    """While this holds advisory lock `lock`, an import job's commit that marks it done waits
    at COMMIT (a deferred trigger asks for the lock): the test can stop the worker right there,
    so that the job is done and the worker never runs a line after the commit."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE FUNCTION test_hold_done() RETURNS trigger AS $$
            BEGIN
                IF NEW.status = 'done' AND NEW.kind = 'import' THEN
                    PERFORM pg_advisory_xact_lock({lock});
                END IF;
                RETURN NULL;
            END $$ LANGUAGE plpgsql;
            CREATE CONSTRAINT TRIGGER test_hold_done AFTER UPDATE ON annotations_job
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_hold_done();
            SELECT pg_advisory_lock({lock});
            """
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_unlock_all(); DROP TRIGGER IF EXISTS test_hold_done "
                "ON annotations_job; DROP FUNCTION IF EXISTS test_hold_done();"
            )


def _waiting_for(lock: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s "
            "AND NOT granted",
            [lock],
        )
        return cursor.fetchone()[0] > 0


def test_a_worker_killed_right_after_the_import_is_done_leaves_no_patient_file(
    celery_worker_process, tmp_path, settings
):
    """Issue 29: the job is done, its worker dies before removing the extracted raw DICOM and
    the upload; the sweep (at the next worker's start, and on beat) removes them."""
    settings.MEDIA_ROOT = tmp_path / "media"
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "done-gx"
    folder.mkdir(parents=True)
    upload = _gastricx_upload(tmp_path, folder)
    job = job_create(
        kind="import", params={"path": str(upload), "family": "gastricx", "name": "gx-done"}
    )
    lock = 290029
    with _done_commit_held(lock):
        first = celery_worker_process(env=RECOVERY_ENV)
        benchmark_import_task.delay(job.pk)
        wait_for(lambda: _waiting_for(lock), timeout=240, interval=0.05)
        # The commit that marks the job done is on its way: freeze the worker, let it land.
        os.killpg(first.process.pid, signal.SIGSTOP)
    wait_for(lambda: Job.objects.filter(pk=job.pk, status=JobStatus.DONE).exists(), timeout=30)
    first.kill()
    media = Path(settings.MEDIA_ROOT)
    assert _holds_phi(media), "the dead worker left the raw DICOM and the upload behind"
    assert Case.objects.filter(benchmark__name="gx-done").count() == CASES

    celery_worker_process(*beat_args(tmp_path), env={**RECOVERY_ENV, "MEDIA_SWEEP_SECONDS": "2"})
    wait_for(lambda: _holds_phi(media) == [], timeout=60)
    assert not folder.exists()
    assert list((media / IMPORTS_FOLDER).iterdir()) == []
    assert Case.objects.filter(benchmark__name="gx-done").count() == CASES
    committed = {
        Path(path).parts[1] for path in Volume.objects.values_list("cache_path", flat=True)
    }
    assert {path.name for path in (media / VOLUMES_FOLDER).iterdir()} == committed
