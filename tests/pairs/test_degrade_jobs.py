"""Degradation jobs in chunks that any worker takes, resumed from what is stored after a worker
died (simulated here by its lease and a quiet heartbeat; real SIGKILLs are in
tests/integration/test_job_recovery.py)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotations.imaging.degrade import DegradationError
from annotations.models import Image, Item, Job, JobChunk, JobStatus
from annotations.services import degrade as degrade_services
from annotations.services.degrade import PlannedTwin, degrade_twins
from annotations.services.errors import DomainError
from annotations.services.jobs import job_create, job_retry
from annotations.services.recovery import lease_claim, reap_stale
from annotations.tasks.degrade import benchmark_degrade_task
from tests.pairs.helpers import make_pair_benchmark
from tests.support.jobs import run_chunks, run_job

pytestmark = pytest.mark.django_db

KINDS = {"kinds": ["gaussian_blur", "gaussian_noise"], "severities": ["mild", "severe"]}
PER_CLEAN = 4  # both kinds fit every modality below, at both severities


@pytest.fixture(autouse=True)
def _small_chunks(settings):
    settings.JOB_DEGRADE_CHUNK = 3  # each clean item's 4 twins make a chunk


def _job(benchmark, user=None, seed: int = 4) -> Job:
    return job_create(
        kind="degrade", params={**KINDS, "seed": seed}, user=user, benchmark=benchmark
    )


def _benchmark():
    return make_pair_benchmark(modalities=("CT", "Dermoscopy", "X-ray"))


def _twins():
    return Item.objects.filter(clean_twin__isnull=False)


def _die_holding(chunk: JobChunk) -> None:
    """What a worker killed mid-chunk leaves: the chunk running, its heartbeat gone quiet."""
    lease = lease_claim(JobChunk.objects.filter(status="queued"), chunk.pk, status="running")
    assert lease is not None
    JobChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))


def _stored_files() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(path.relative_to(root)) for path in (root / "images").rglob("*") if path.is_file()}


def test_the_job_is_planned_in_chunks_of_whole_clean_items_with_their_indexes(people):
    benchmark = _benchmark()
    job = _job(benchmark, people["curator"])
    benchmark_degrade_task(job.pk)
    job.refresh_from_db()
    chunks = list(job.chunks.order_by("number"))
    assert (job.status, job.total, job.done) == (JobStatus.RUNNING, 3 * PER_CLEAN, 0)
    assert [(c.number, c.status, c.total) for c in chunks] == [
        (n, JobStatus.QUEUED, PER_CLEAN) for n in range(3)
    ]
    assert not _twins().exists()  # the workers make them, chunk by chunk

    run_chunks(job.pk)
    job.refresh_from_db()
    assert (job.status, job.done, job.result) == (
        JobStatus.DONE,
        3 * PER_CLEAN,
        {"benchmark": "medq", "created": 3 * PER_CLEAN},
    )
    assert sorted(_twins().values_list("source_index", flat=True)) == list(range(3, 15))
    assert [c.done for c in job.chunks.order_by("number")] == [PER_CLEAN] * 3
    assert _twins().first().revisions.get().author == people["curator"]


def test_a_chunk_whose_worker_died_resumes_and_makes_only_the_missing_twins(people):
    benchmark = _benchmark()
    job = _job(benchmark)
    benchmark_degrade_task(job.pk)
    first = JobChunk.objects.get(job=job, number=0)
    _die_holding(first)
    # It had committed two twins and counted three (its last count did not commit with them).
    planned = [PlannedTwin(*row) for row in first.params["twins"]]
    degrade_twins(planned=planned[:2], base_seed=4)
    JobChunk.objects.filter(pk=first.pk).update(done=3)
    Job.objects.filter(pk=job.pk).update(done=3)
    made_before = set(_twins().values_list("pk", flat=True))

    reaped = reap_stale()
    assert [(r.kind, r.pk, r.action) for r in reaped] == [("job-chunk", first.pk, "requeued")]
    first.refresh_from_db()
    assert (first.status, first.recoveries) == (JobStatus.QUEUED, 1)

    job = run_job(job.pk)  # a redelivered job task finds its chunks; they run
    assert job.status == JobStatus.DONE
    assert job.result["created"] == 3 * PER_CLEAN  # the dead worker's two count for the job
    assert (job.done, job.total) == (3 * PER_CLEAN, 3 * PER_CLEAN)
    identities = Counter(
        _twins().values_list(
            "clean_twin_id", "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    assert len(identities) == 3 * PER_CLEAN and set(identities.values()) == {1}
    assert made_before < set(_twins().values_list("pk", flat=True))
    first.refresh_from_db()
    assert (first.status, first.attempts, first.done) == (JobStatus.DONE, 2, PER_CLEAN)


def test_the_reaper_leaves_a_job_to_its_open_chunks_but_requeues_one_that_died_planning():
    benchmark = _benchmark()
    fanned_out = _job(benchmark)
    benchmark_degrade_task(fanned_out.pk)
    long_ago = timezone.now() - timedelta(hours=1)
    Job.objects.filter(pk=fanned_out.pk).update(heartbeat_at=long_ago)
    planning = _job(benchmark, seed=9)
    Job.objects.filter(pk=planning.pk).update(status="running", heartbeat_at=long_ago)

    reaped = reap_stale()
    assert [(r.kind, r.pk, r.action) for r in reaped] == [("degrade", planning.pk, "requeued")]
    assert Job.objects.get(pk=fanned_out.pk).status == JobStatus.RUNNING
    planning = run_job(planning.pk)
    assert (planning.status, planning.recoveries, planning.attempts) == (JobStatus.DONE, 1, 1)


def test_a_finish_cut_short_is_done_again_by_the_requeued_job():
    benchmark = _benchmark()
    job = _job(benchmark)
    benchmark_degrade_task(job.pk)
    for chunk in job.chunks.all():  # every chunk ended, but the worker died finishing the job
        JobChunk.objects.filter(pk=chunk.pk).update(status="done", result={"created": 4})
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert [r.action for r in reap_stale()] == ["requeued"]
    job = run_job(job.pk)
    assert (job.status, job.result["created"]) == (JobStatus.DONE, 12)


def test_a_failing_chunk_fails_the_job_and_a_retry_does_only_the_rest(people, monkeypatch):
    benchmark = _benchmark()
    job = _job(benchmark)
    benchmark_degrade_task(job.pk)
    original = degrade_services.apply

    def broken_on_dermoscopy(pixels, kind, severity, *, seed, modality):
        if modality == "Dermoscopy":
            raise DegradationError("the engine broke")
        return original(pixels, kind, severity, seed=seed, modality=modality)

    monkeypatch.setattr(degrade_services, "apply", broken_on_dermoscopy)
    first, second, third = JobChunk.objects.filter(job=job).order_by("number")
    run_chunks(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.message == "Part 2: Item #1: the engine broke"
    statuses = list(job.chunks.order_by("number").values_list("status", flat=True))
    assert statuses == [JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED]
    assert _twins().count() == PER_CLEAN

    monkeypatch.setattr(degrade_services, "apply", original)
    job_retry(job=job)
    job.refresh_from_db()
    assert (job.status, job.message) == (JobStatus.QUEUED, "")
    job = run_job(job.pk)
    assert (job.status, job.result["created"]) == (JobStatus.DONE, 3 * PER_CLEAN)
    attempts = list(job.chunks.order_by("number").values_list("attempts", flat=True))
    assert attempts == [1, 2, 1]  # the done chunk was not done again
    assert _twins().count() == 3 * PER_CLEAN
    with pytest.raises(DomainError, match="Only a failed job"):
        job_retry(job=job)


def test_two_jobs_with_the_same_arguments_make_each_twin_once():
    benchmark = _benchmark()
    first, second = _job(benchmark), _job(benchmark)
    benchmark_degrade_task(first.pk)
    benchmark_degrade_task(second.pk)  # planned before the first made anything
    indexes = [
        twin[-1]
        for chunk in JobChunk.objects.all()
        for twin in chunk.params["twins"]  # each plan holds indexes of its own
    ]
    assert len(indexes) == len(set(indexes)) == 2 * 3 * PER_CLEAN
    run_chunks(second.pk)
    run_chunks(first.pk)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (JobStatus.DONE, JobStatus.DONE)
    assert (second.result["created"], first.result["created"]) == (3 * PER_CLEAN, 0)
    assert _twins().count() == 3 * PER_CLEAN


def test_the_database_refuses_a_second_copy_of_a_twin():
    benchmark = _benchmark()
    run_job(_job(benchmark).pk)
    twin = _twins().first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.create(
            benchmark=benchmark,
            source_index=999,
            question=twin.question,
            answer="A",
            clean_twin_id=twin.clean_twin_id,
            degradation_type=twin.degradation_type,
            degradation_severity=twin.degradation_severity,
            degradation_seed=twin.degradation_seed,
        )


def test_files_of_twins_rolled_back_with_a_dead_worker_are_adopted_or_removed():
    benchmark = _benchmark()
    earlier = _stored_files()  # media outlive each test's rows
    run_job(_job(benchmark).pk)
    twin = _twins().order_by("source_index").last()
    image = twin.item_images.get().image
    path = Path(settings.MEDIA_ROOT) / image.file.name
    # The worker died after writing the file and a temporary one: its rows were rolled back.
    leftover = path.parent / f".{path.name}.x1y2.part"
    leftover.write_bytes(path.read_bytes()[:10])
    twin.delete()
    Image.objects.filter(pk=image.pk).delete()
    assert path.exists()

    job = run_job(_job(benchmark).pk)
    assert job.result["created"] == 1
    assert not leftover.exists()
    rows = set(Image.objects.values_list("file", flat=True))
    assert _stored_files() - earlier <= rows
    assert rows <= _stored_files()
    remade = _twins().order_by("source_index").last().item_images.get().image
    assert (remade.file.name, remade.sha256) == (image.file.name, image.sha256)
