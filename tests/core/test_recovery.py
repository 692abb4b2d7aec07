"""The reaper and the leases that let background work survive the death of its worker."""

from __future__ import annotations

import threading
from datetime import timedelta

from django.db.models import Q
from django.test import TestCase, TransactionTestCase, override_settings
from django.utils import timezone

from annotations.models import Job, JobStatus
from annotations.services import recovery


def _kind(sent: list[int]) -> recovery.Kind:
    return recovery.Kind(
        name="test-kind",
        rows=lambda: Job.objects.filter(kind="test-kind"),
        running=Q(status=JobStatus.RUNNING),
        waiting=Q(status=JobStatus.QUEUED),
        requeue={"status": JobStatus.QUEUED},
        send=sent.append,
    )


class _Registered:
    def setUp(self):
        super().setUp()
        self.sent: list[int] = []
        self.saved = recovery.registered_kinds()
        recovery._KINDS.clear()
        recovery.register(_kind(self.sent))

    def tearDown(self):
        recovery._KINDS.clear()
        recovery._KINDS.update(self.saved)
        super().tearDown()


def _job(**fields) -> Job:
    return Job.objects.create(kind="test-kind", params={}, **fields)


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


class LeaseTests(TestCase):
    def test_only_one_worker_claims_a_row(self):
        job = _job()
        queued = Job.objects.filter(status=JobStatus.QUEUED)
        first = recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        second = recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        self.assertIsNotNone(first)
        self.assertIsNone(second)
        job.refresh_from_db()
        self.assertEqual((job.status, job.attempts), (JobStatus.RUNNING, 1))
        self.assertIsNotNone(job.heartbeat_at)

    def test_a_replaced_worker_cannot_write_over_its_successor(self):
        job = _job()
        queued = Job.objects.filter(status=JobStatus.QUEUED)
        old = recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)  # what the reaper does
        new = recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        self.assertFalse(recovery.lease_update(old, status=JobStatus.DONE))
        self.assertTrue(recovery.lease_update(new, status=JobStatus.DONE))
        job.refresh_from_db()
        self.assertEqual((job.status, job.attempts), (JobStatus.DONE, 2))


class ReaperTests(_Registered, TestCase):
    def test_it_requeues_running_work_whose_heartbeat_went_quiet(self):
        dead = _job(status=JobStatus.RUNNING, attempts=1, heartbeat_at=_ago(600))
        alive = _job(status=JobStatus.RUNNING, attempts=1, heartbeat_at=_ago(1))
        never_beat = _job(status=JobStatus.RUNNING, attempts=1)
        with self.captureOnCommitCallbacks(execute=True):
            reaped = recovery.reap_stale()
        self.assertEqual(
            sorted((r.pk, r.action) for r in reaped),
            sorted([(dead.pk, "requeued"), (never_beat.pk, "requeued")]),
        )
        self.assertEqual(sorted(self.sent), sorted([dead.pk, never_beat.pk]))
        dead.refresh_from_db()
        alive.refresh_from_db()
        self.assertEqual((dead.status, dead.recoveries), (JobStatus.QUEUED, 1))
        self.assertEqual((alive.status, alive.recoveries), (JobStatus.RUNNING, 0))

    def test_it_resends_a_queued_task_whose_message_may_be_lost_but_only_once_a_while(self):
        forgotten = _job()
        Job.objects.filter(pk=forgotten.pk).update(created_at=_ago(3600))
        fresh = _job()
        with self.captureOnCommitCallbacks(execute=True):
            first = recovery.reap_stale()
        with self.captureOnCommitCallbacks(execute=True):
            second = recovery.reap_stale()
        self.assertEqual([(r.pk, r.action) for r in first], [(forgotten.pk, "resent")])
        self.assertEqual(second, [])
        self.assertEqual(self.sent, [forgotten.pk])
        self.assertNotIn(fresh.pk, self.sent)

    def test_ended_work_is_left_alone(self):
        for status in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED):
            _job(status=status, heartbeat_at=_ago(3600))
        with self.captureOnCommitCallbacks(execute=True):
            self.assertEqual(recovery.reap_stale(), [])
        self.assertEqual(self.sent, [])

    def test_nothing_is_sent_when_the_requeue_rolls_back(self):
        _job(status=JobStatus.RUNNING, heartbeat_at=_ago(600))
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            recovery.reap_stale()
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(self.sent, [])

    def test_staleness_follows_the_setting(self):
        job = _job(status=JobStatus.RUNNING, heartbeat_at=_ago(30))
        with override_settings(JOB_STALE_SECONDS=60), self.captureOnCommitCallbacks(execute=True):
            self.assertEqual(recovery.reap_stale(), [])
        with override_settings(JOB_STALE_SECONDS=10), self.captureOnCommitCallbacks(execute=True):
            self.assertEqual([row.pk for row in recovery.reap_stale()], [job.pk])
        self.assertEqual(self.sent, [job.pk])


class HeartbeatTests(TransactionTestCase):
    """The beats come from another thread (its own connection): rows must be committed."""

    def _wait(self, condition, seconds: float = 30.0) -> bool:
        done = threading.Event()
        deadline = timezone.now() + timedelta(seconds=seconds)
        while timezone.now() < deadline:
            if condition():
                return True
            done.wait(0.05)
        return False

    def test_the_heartbeat_moves_while_the_work_runs_and_stops_after(self):
        job = _job()
        lease = recovery.lease_claim(
            Job.objects.filter(status=JobStatus.QUEUED), job.pk, status=JobStatus.RUNNING
        )
        claimed_at = Job.objects.get(pk=job.pk).heartbeat_at
        with recovery.heartbeat(lease, every=0.05):
            moved = self._wait(lambda: Job.objects.get(pk=job.pk).heartbeat_at > claimed_at)
        self.assertTrue(moved)
        last = Job.objects.get(pk=job.pk).heartbeat_at
        threading.Event().wait(0.3)
        self.assertEqual(Job.objects.get(pk=job.pk).heartbeat_at, last)
        self.assertFalse(lease.lost.is_set())

    def test_a_worker_learns_that_its_row_was_taken_over(self):
        job = _job()
        queued = Job.objects.filter(status=JobStatus.QUEUED)
        lease = recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        Job.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)
        recovery.lease_claim(queued, job.pk, status=JobStatus.RUNNING)
        with recovery.heartbeat(lease, every=0.05):
            self.assertTrue(self._wait(lease.lost.is_set))
            with self.assertRaises(recovery.LeaseLost):
                lease.check()
