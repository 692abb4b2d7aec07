"""SIGKILL of the whole worker during a degradation job and during a triage recomputation, on
Redis and on the file-system broker: a new worker (with the reaper's clock) finishes each job,
with every twin made once and no image file without its row.

The jobs are split into chunks (JOB_*_CHUNK) so that the kill lands while some chunks are done,
one is running and others wait; the killed worker's running chunk goes quiet, the reaper requeues
it, and messages the file-system broker lost with the worker are sent again.
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.db.models import F
from django.test import Client
from django.urls import reverse
from PIL import Image as PILImage

from annotations.imaging import phantoms
from annotations.models import Image, ImageHash, Item, Job, JobChunk, JobStatus, Suspicion
from annotations.services.degrade import encode_png
from tests.factories import make_benchmark, make_item, make_personas
from tests.integration.conftest import beat_args, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CLEAN_CT = 6
DEGRADE = {"kinds": ["low_dose", "sparse_view", "gaussian_noise"], "severities": ["mild", "severe"]}
TWINS = CLEAN_CT * 6  # three kinds at two severities
TRIAGE_IMAGES = 300
# Two clean items (two progress writes) per degradation chunk; 100 images (two progress writes,
# HASH_BATCH) per triage chunk: a chunk whose first half is stored has seconds of work left.
CHUNKS = {"JOB_DEGRADE_CHUNK": "12", "JOB_TRIAGE_CHUNK": "100"}


@pytest.fixture(autouse=True)
def _no_unacked_deliveries(broker):
    """A delivery a killed worker left unacked on Redis would be restored into a later test."""
    yield
    if broker.name == "redis":
        import redis

        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        client.delete("unacked", "unacked_index", "unacked_mutex")


def _image_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in (root / "images").rglob("*") if p.is_file()}


def _kill_mid_job(worker, job: Job) -> list[int]:
    """Kill the worker when a chunk is half done (its first half stored, the rest in the works);
    the ids of the chunks it was holding."""

    def half_done() -> bool:
        running = JobChunk.objects.filter(job=job, status=JobStatus.RUNNING)
        return running.filter(done__gt=0, done__lt=F("total")).exists()

    wait_for(half_done, timeout=180)
    worker.kill()
    held = list(
        JobChunk.objects.filter(job=job, status=JobStatus.RUNNING).values_list("pk", flat=True)
    )
    assert held, "the kill landed between two chunks"
    assert Job.objects.get(pk=job.pk).status == JobStatus.RUNNING
    return held


def _finish_with_a_new_worker(start, tmp_path, broker, job: Job, held: list[int]) -> Job:
    start(*beat_args(tmp_path), env={**broker.worker_env(recovery=True), **CHUNKS})
    wait_for(lambda: Job.objects.get(pk=job.pk).status != JobStatus.RUNNING, timeout=300)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.message
    chunks = JobChunk.objects.filter(job=job)
    assert set(chunks.values_list("status", flat=True)) == {JobStatus.DONE}
    for chunk in chunks.filter(pk__in=held):
        assert chunk.recoveries >= 1 and chunk.attempts >= 2  # requeued after its worker died
    assert job.done == job.total
    return job


def test_a_degradation_job_survives_the_death_of_its_worker(
    broker, celery_worker_process, tmp_path
):
    people = make_personas()
    benchmark = make_benchmark("ct-kill", family="medqdeg")
    for index in range(CLEAN_CT):
        make_item(
            benchmark,
            index=index,
            image=encode_png(phantoms.ct_slice_8bit(256, seed=index)),
            modality="CT",
            degradation_severity="clean",
        )
    files_before = _image_files()
    worker = celery_worker_process(
        "--concurrency", "2", env={**broker.worker_env(recovery=True), **CHUNKS}
    )
    client = Client()
    client.force_login(people["curator"])
    response = client.post(
        reverse("benchmark-degrade", args=[benchmark.name]), {**DEGRADE, "seed": 3}
    )
    job = Job.objects.get(kind="degrade")
    assert response.url == reverse("job", args=[job.pk])

    held = _kill_mid_job(worker, job)
    job = _finish_with_a_new_worker(celery_worker_process, tmp_path, broker, job, held)

    assert job.result == {"benchmark": "ct-kill", "created": TWINS}
    twins = Item.objects.filter(benchmark=benchmark, clean_twin__isnull=False)
    identities = Counter(
        twins.values_list(
            "clean_twin", "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    assert len(identities) == TWINS and set(identities.values()) == {1}  # none twice
    assert sorted(twins.values_list("source_index", flat=True)) == list(
        range(CLEAN_CT, CLEAN_CT + TWINS)
    )
    assert all(twin.item_images.count() == 1 for twin in twins)
    stored = set(Image.objects.values_list("file", flat=True))
    assert _image_files() - files_before <= stored  # no file without its row
    assert not [name for name in _image_files() if name.endswith(".part")]
    for image in Image.objects.filter(items__in=twins):
        data = (Path(settings.MEDIA_ROOT) / image.file.name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == image.sha256  # written whole


def _texture_png(seed: int, size: int = 256) -> bytes:
    small = (np.random.default_rng(seed).random((16, 16, 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    PILImage.fromarray(small).resize((size, size), PILImage.BICUBIC).save(buffer, "PNG")
    return buffer.getvalue()


def test_a_triage_recomputation_survives_the_death_of_its_worker(
    broker, celery_worker_process, tmp_path
):
    people = make_personas()
    benchmark = make_benchmark("triage-kill")
    for index in range(TRIAGE_IMAGES):
        # Every tenth item's answer is not among its options: a known number of suspects.
        make_item(
            benchmark,
            index=index,
            image=_texture_png(index),
            answer="F" if index % 10 == 0 else "A",
        )
    worker = celery_worker_process(
        "--concurrency", "2", env={**broker.worker_env(recovery=True), **CHUNKS}
    )
    client = Client()
    client.force_login(people["curator"])
    client.post(reverse("triage-recompute", args=[benchmark.name]))
    job = Job.objects.get(kind="triage")

    held = _kill_mid_job(worker, job)
    job = _finish_with_a_new_worker(celery_worker_process, tmp_path, broker, job, held)

    assert (job.total, job.result["items"]) == (TRIAGE_IMAGES, TRIAGE_IMAGES)
    assert ImageHash.objects.filter(image__items__benchmark=benchmark).count() == TRIAGE_IMAGES
    suspects = Suspicion.objects.filter(item__benchmark=benchmark)
    assert suspects.count() == job.result["suspects"] == TRIAGE_IMAGES // 10
    assert job.result["by_code"]["answer_out_of_range"] == TRIAGE_IMAGES // 10
