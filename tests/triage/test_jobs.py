"""Triage recomputation as a job: the images to hash are chunks any worker takes; the last
chunk combines the evidence. Resumed from what is stored after a worker died (its lease and a
quiet heartbeat; real SIGKILLs are in tests/integration/test_job_recovery.py)."""

from __future__ import annotations

from datetime import timedelta

from django.test import TestCase, override_settings
from django.utils import timezone

from annotations.models import ImageHash, Job, JobChunk, JobStatus, Suspicion, TriageSetting
from annotations.services.recovery import lease_claim, reap_stale
from annotations.services.triage import image_hashes_ensure, triage_schedule
from annotations.tasks.triage import triage_benchmark_task
from tests.factories import make_benchmark, make_item
from tests.support.jobs import run_chunks, run_job
from tests.triage.helpers import texture_jpeg

IMAGES = 5


def _benchmark(name: str = "hashed"):
    """Five items on five frames, two of them with an answer beyond their options."""
    benchmark = make_benchmark(name)
    for index in range(IMAGES):
        make_item(
            benchmark,
            index=index,
            image=texture_jpeg(300 + index),
            answer="F" if index < 2 else "A",
        )
    return benchmark


def _hashes(benchmark) -> int:
    return ImageHash.objects.filter(image__items__benchmark=benchmark).distinct().count()


@override_settings(JOB_TRIAGE_CHUNK=2)
class TriageJobTests(TestCase):
    def setUp(self):
        self.benchmark = _benchmark()
        self.job = triage_schedule(benchmark_id=self.benchmark.pk)

    def test_the_images_to_hash_are_chunks_and_the_last_one_stores_the_triage(self):
        triage_benchmark_task(self.job.pk)
        self.job.refresh_from_db()
        chunks = list(self.job.chunks.order_by("number"))
        self.assertEqual([c.total for c in chunks], [2, 2, 1])
        self.assertEqual((self.job.status, self.job.total), (JobStatus.RUNNING, IMAGES))
        self.assertFalse(Suspicion.objects.exists())

        run_chunks(self.job.pk)
        self.job.refresh_from_db()
        self.assertEqual((self.job.status, self.job.done), (JobStatus.DONE, IMAGES))
        self.assertEqual((self.job.result["benchmark"], self.job.result["suspects"]), ("hashed", 2))
        self.assertEqual(_hashes(self.benchmark), IMAGES)
        self.assertEqual(Suspicion.objects.filter(item__benchmark=self.benchmark).count(), 2)
        self.assertEqual(TriageSetting.objects.get(benchmark=self.benchmark).summary["items"], 5)

    def test_a_chunk_whose_worker_died_counts_what_it_hashed_and_hashes_the_rest(self):
        triage_benchmark_task(self.job.pk)
        first = JobChunk.objects.get(job=self.job, number=0)
        lease_claim(JobChunk.objects.filter(status="queued"), first.pk, status="running")
        ids = first.params["ids"]
        image_hashes_ensure(benchmark=self.benchmark, ids=(ids[0], ids[0]))  # one of its two
        JobChunk.objects.filter(pk=first.pk).update(
            heartbeat_at=timezone.now() - timedelta(hours=1)
        )

        self.assertEqual([(r.kind, r.pk) for r in reap_stale()], [("job-chunk", first.pk)])
        job = run_job(self.job.pk)
        self.assertEqual((job.status, job.done, job.total), (JobStatus.DONE, IMAGES, IMAGES))
        first.refresh_from_db()
        self.assertEqual((first.recoveries, first.done, first.result), (1, 2, {"hashed": 1}))
        self.assertEqual(ImageHash.objects.count(), IMAGES)

    def test_a_recomputation_cut_short_after_its_chunks_is_done_again_whole(self):
        triage_benchmark_task(self.job.pk)
        run_chunks(self.job.pk)
        Suspicion.objects.all().delete()  # as if the worker died while storing (rolled back)
        Job.objects.filter(pk=self.job.pk).update(
            status="running", heartbeat_at=timezone.now() - timedelta(hours=1)
        )
        self.assertEqual([(r.kind, r.action) for r in reap_stale()], [("triage", "requeued")])
        job = run_job(self.job.pk)
        self.assertEqual((job.status, job.recoveries), (JobStatus.DONE, 1))
        self.assertEqual(Suspicion.objects.filter(item__benchmark=self.benchmark).count(), 2)

    def test_a_benchmark_whose_images_are_hashed_is_triaged_by_the_jobs_own_task(self):
        image_hashes_ensure(benchmark=self.benchmark)
        triage_benchmark_task(self.job.pk)
        self.job.refresh_from_db()
        self.assertEqual((self.job.status, self.job.chunks.count()), (JobStatus.DONE, 0))
        self.assertEqual(self.job.result["suspects"], 2)

    def test_the_jobs_task_claims_only_triage_jobs(self):
        other = Job.objects.create(kind="degrade", benchmark=self.benchmark, params={})
        triage_benchmark_task(other.pk)  # a stray message naming another kind's job
        other.refresh_from_db()
        self.assertEqual((other.status, other.attempts), (JobStatus.QUEUED, 0))
