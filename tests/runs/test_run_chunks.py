"""Chunks: a run cut into slices that workers share, each claimed under a lease, recovered by the
reaper when its worker died, and shown as a strip on the run page."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from unittest import mock

from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from annotations.models import Prediction, Run, RunChunk, RunStatus
from annotations.selectors.runs import run_chunk_strip
from annotations.services import recovery
from annotations.services import runs as run_services
from annotations.services.errors import DomainError
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_endpoint, make_run_benchmark
from tests.support.fake_openai import FakeOpenAIServer, answer_letter, prompt_text


def asked_frames(server: FakeOpenAIServer) -> list[int]:
    return [int(re.search(r"frame (\d+)\?", prompt_text(r)).group(1)) for r in server.requests]


def chunks_of(run: Run) -> list[RunChunk]:
    return list(RunChunk.objects.filter(run=run).order_by("number"))


class ChunkPlanTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(40)

    def create(self, **kwargs) -> Run:
        endpoint = kwargs.pop("endpoint", None) or make_endpoint("http://127.0.0.1:9/v1")
        return run_services.run_create(
            benchmark=self.benchmark, endpoint=endpoint, enqueue=False, **kwargs
        )

    def test_a_chunk_is_a_whole_number_of_rounds_and_small_runs_split_in_about_sixteen(self):
        # At least four rounds (a chunk's start and end cost a few writes with nothing in
        # flight), about sixteen chunks while they are short, at most sixteen rounds.
        self.assertEqual(run_services.chunk_size(total=200, concurrency=8, kind="model"), 32)
        self.assertEqual(run_services.chunk_size(total=640, concurrency=8, kind="model"), 40)
        self.assertEqual(run_services.chunk_size(total=10, concurrency=4, kind="model"), 16)
        self.assertEqual(run_services.chunk_size(total=100_000, concurrency=8, kind="model"), 128)
        self.assertEqual(
            run_services.chunk_size(total=100_000, concurrency=8, kind="baseline"), 500
        )

    def test_the_chunks_cover_every_item_once_in_index_order(self):
        run = self.create(concurrency=2)
        chunks = chunks_of(run)
        self.assertEqual(len(chunks), 5)
        self.assertEqual(sum(c.size for c in chunks), 40)
        self.assertEqual((chunks[0].first_index, chunks[0].last_index), (1, 8))
        self.assertEqual((chunks[-1].first_index, chunks[-1].last_index), (33, 40))
        self.assertEqual({c.status for c in chunks}, {RunStatus.QUEUED})

    def test_a_limit_and_a_filter_are_kept_inside_the_ranges(self):
        run = self.create(concurrency=1, filters={"category": "Lesion", "limit": 7})
        chunks = chunks_of(run)
        self.assertEqual(run.total, 7)
        self.assertEqual(sum(c.size for c in chunks), 7)
        self.assertEqual(chunks[-1].last_index, 13)  # the 7th odd index
        baseline = run_services.endpoint_ensure_baseline(baseline="first")
        run = self.create(endpoint=baseline, filters={"category": "Lesion", "limit": 7})
        run = run_services.run_execute(run_id=run.pk)
        answered = sorted(run.predictions.values_list("item__source_index", flat=True))
        self.assertEqual(answered, [1, 3, 5, 7, 9, 11, 13])

    def test_creating_a_run_sends_one_task_per_chunk_after_commit(self):
        from annotations.tasks import runs as run_tasks

        with (
            mock.patch.object(run_tasks.run_chunk_execute, "delay") as delay,
            self.captureOnCommitCallbacks(execute=True) as callbacks,
        ):
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint("http://127.0.0.1:9/v1"),
                concurrency=4,
            )
            self.assertEqual(delay.call_count, 0)  # nothing before the commit
        self.assertEqual(len(callbacks), 1)
        self.assertEqual([c.args[0] for c in delay.call_args_list], [c.pk for c in chunks_of(run)])


class ChunkExecuteTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(12)

    def test_a_chunk_answers_its_own_items_once_and_the_last_one_finishes_the_run(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(server.base_url),
                concurrency=2,
                enqueue=False,
            )
            first, *rest = chunks_of(run)
            self.assertEqual(run_services.chunk_execute(chunk_id=first.pk), RunStatus.DONE)
            self.assertIsNone(run_services.chunk_execute(chunk_id=first.pk))  # taken already
            self.assertEqual(sorted(asked_frames(server)), list(range(1, 9)))
            run.refresh_from_db()
            self.assertEqual((run.status, run.completed), (RunStatus.RUNNING, 8))
            for chunk in rest:
                run_services.chunk_execute(chunk_id=chunk.pk)
            self.assertEqual(Counter(asked_frames(server)), Counter(range(1, 13)))
        run.refresh_from_db()
        self.assertEqual((run.status, run.completed), (RunStatus.DONE, 12))
        self.assertEqual(run.summary["overall"]["n"], 12)
        first.refresh_from_db()
        self.assertEqual((first.completed, first.failed, first.attempts), (8, 0, 1))
        self.assertIsNotNone(first.heartbeat_at)

    def test_a_chunk_task_goes_on_with_the_waiting_chunks_of_its_run_for_a_while(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            concurrency=1,
            enqueue=False,
        )
        RunChunk.objects.filter(run=run).delete()  # a baseline's 500: cut it in three here
        for number, first in enumerate((1, 5, 9)):
            RunChunk.objects.create(
                run=run, number=number, first_index=first, last_index=first + 3, size=4
            )
        first, second, third = chunks_of(run)
        # No time left after its own chunk: the task answers that one only.
        run_services.chunk_task(chunk_id=second.pk, seconds=0)
        self.assertEqual(
            [c.status for c in chunks_of(run)], [RunStatus.QUEUED, RunStatus.DONE, RunStatus.QUEUED]
        )
        # Its chunk already taken, a task answers the run's other waiting chunks.
        run_services.chunk_task(chunk_id=second.pk)
        self.assertEqual({c.status for c in chunks_of(run)}, {RunStatus.DONE})
        self.assertEqual({c.attempts for c in chunks_of(run)}, {1})
        run.refresh_from_db()
        self.assertEqual((run.status, run.completed), (RunStatus.DONE, 12))

    def test_a_chunk_of_a_cancelled_run_is_not_answered(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        run_services.run_cancel(run=run)
        self.assertEqual({c.status for c in chunks_of(run)}, {RunStatus.CANCELLED})
        self.assertIsNone(run_services.chunk_execute(chunk_id=chunks_of(run)[0].pk))
        self.assertFalse(Prediction.objects.filter(run=run).exists())

    def test_a_chunk_claimed_before_the_run_ended_stops_at_once(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)  # failed elsewhere
        chunk = chunks_of(run)[0]
        self.assertEqual(run_services.chunk_execute(chunk_id=chunk.pk), RunStatus.CANCELLED)
        self.assertFalse(Prediction.objects.filter(run=run).exists())

    def test_a_chunk_that_cannot_start_fails_the_run_and_cancels_the_waiting_chunks(self):
        endpoint = make_endpoint("http://127.0.0.1:9/v1", name="nokey")
        endpoint.api_key_env = "CLINREVIEW_KEY_UNSET_VARIABLE"
        endpoint.save()
        run = run_services.run_create(
            benchmark=self.benchmark, endpoint=endpoint, concurrency=1, enqueue=False
        )
        first, *rest = chunks_of(run)
        with self.assertRaises(DomainError):
            run_services.chunk_execute(chunk_id=first.pk)
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.FAILED)
        self.assertIn("CLINREVIEW_KEY_UNSET_VARIABLE", run.error)
        first.refresh_from_db()
        self.assertEqual(first.status, RunStatus.FAILED)
        self.assertEqual({c.status for c in chunks_of(run)[1:]}, {RunStatus.CANCELLED})

    def test_a_worker_replaced_by_another_does_not_write_the_chunk_over(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        chunk = chunks_of(run)[0]
        waiting = RunChunk.objects.filter(status=RunStatus.QUEUED)
        old = recovery.lease_claim(waiting, chunk.pk, status=RunStatus.RUNNING)
        RunChunk.objects.filter(pk=chunk.pk).update(status=RunStatus.QUEUED)  # the reaper
        self.assertEqual(run_services.chunk_execute(chunk_id=chunk.pk), RunStatus.DONE)
        self.assertFalse(recovery.lease_update(old, status=RunStatus.FAILED))
        chunk.refresh_from_db()
        self.assertEqual((chunk.status, chunk.attempts), (RunStatus.DONE, 2))


class ChunkRecoveryTests(TestCase):
    """What the reaper does with the chunks and runs a dead worker left behind."""

    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(8)

    def setUp(self):
        self.sent: list[tuple[str, int]] = []
        self.saved = recovery.registered_kinds()
        recovery._KINDS.clear()
        for name, kind in self.saved.items():
            if name in ("run", "run-chunk"):
                recovery.register(
                    recovery.Kind(
                        name=kind.name,
                        rows=kind.rows,
                        running=kind.running,
                        waiting=kind.waiting,
                        requeue=kind.requeue,
                        send=lambda pk, name=name: self.sent.append((name, pk)),
                    )
                )

    def tearDown(self):
        recovery._KINDS.clear()
        recovery._KINDS.update(self.saved)

    def reap(self) -> list[tuple[str, int, str]]:
        with self.captureOnCommitCallbacks(execute=True):
            return sorted((r.kind, r.pk, r.action) for r in recovery.reap_stale())

    def dead_chunk(self, server: FakeOpenAIServer) -> tuple[Run, RunChunk]:
        """A worker claimed the (only) chunk, stored one answer and died a while ago."""
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=make_endpoint(server.base_url),
            concurrency=2,
            enqueue=False,
        )
        chunk = chunks_of(run)[0]
        recovery.lease_claim(
            RunChunk.objects.filter(status=RunStatus.QUEUED), chunk.pk, status=RunStatus.RUNNING
        )
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
        Prediction.objects.create(run=run, item=self.items[0], raw_text="B", extracted="B")
        RunChunk.objects.filter(pk=chunk.pk).update(completed=1)  # counted with the answer
        long_ago = timezone.now() - timedelta(minutes=10)
        RunChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=long_ago)
        Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
        return run, chunk

    def test_a_dead_workers_chunk_is_requeued_and_answered_again_for_its_missing_item_only(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            run, chunk = self.dead_chunk(server)
            self.assertEqual(self.reap(), [("run-chunk", chunk.pk, "requeued")])
            self.assertEqual(self.sent, [("run-chunk", chunk.pk)])
            chunk.refresh_from_db()
            self.assertEqual((chunk.status, chunk.recoveries), (RunStatus.QUEUED, 1))
            self.assertEqual(run_services.chunk_execute(chunk_id=chunk.pk), RunStatus.DONE)
            self.assertEqual(sorted(asked_frames(server)), list(range(2, 9)))
        self.assertEqual(run.predictions.get(item=self.items[0]).raw_text, "B")  # kept
        chunk.refresh_from_db()
        self.assertEqual((chunk.completed, chunk.attempts), (8, 2))

    def test_a_live_chunk_is_left_alone(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            run, chunk = self.dead_chunk(server)
        RunChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=timezone.now())
        self.assertEqual(self.reap(), [])

    def test_a_run_whose_chunks_ended_but_whose_finish_was_lost_is_finished(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        run = run_services.run_execute(run_id=run.pk)
        # The worker died between its last chunk's end and the run's finish.
        long_ago = timezone.now() - timedelta(minutes=10)
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=long_ago)
        self.assertEqual(self.reap(), [("run", run.pk, "requeued")])
        run_services.run_resume(run_id=run.pk)
        run.refresh_from_db()
        self.assertEqual((run.status, run.recoveries, run.completed), (RunStatus.DONE, 1, 8))

    def test_waiting_chunks_whose_messages_were_lost_are_sent_again_through_their_run(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        self.assertEqual(self.reap(), [])  # just created: its messages are on their way
        Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=1))
        self.assertEqual(self.reap(), [("run", run.pk, "resent")])
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            run_services.run_resume(run_id=run.pk)
        self.assertEqual(len(callbacks), 1)  # the chunk tasks, after commit
        self.assertEqual(self.reap(), [])  # not again before RESEND_SECONDS


@fast_passwords
class ChunkStripTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(40)

    def running_run(self) -> Run:
        with FakeOpenAIServer(answer_letter("A")) as server:
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(server.base_url),
                concurrency=1,
                enqueue=False,
            )
            chunks = chunks_of(run)
            for chunk in chunks[:3]:
                run_services.chunk_execute(chunk_id=chunk.pk)
        RunChunk.objects.filter(pk=chunks[3].pk).update(status=RunStatus.RUNNING, recoveries=1)
        RunChunk.objects.filter(pk=chunks[4].pk).update(status=RunStatus.FAILED)
        return run

    def test_the_strip_counts_chunks_by_state_and_folds_many_into_cells(self):
        run = self.running_run()
        strip = run_chunk_strip(run=run)
        self.assertEqual(
            {k: v for k, v in strip.counts.items() if v},
            {"done": 3, "running": 1, "failed": 1, "queued": 5},
        )
        self.assertEqual([c["status"] for c in strip.cells[:6]], [
            "done", "done", "done", "running", "failed", "queued",
        ])  # fmt: skip
        self.assertEqual((strip.cells[0]["completed"], strip.cells[0]["size"]), (4, 4))
        self.assertEqual(strip.recovered, 1)
        folded = run_chunk_strip(run=run, cells=3)
        self.assertEqual(folded.per_cell, 4)
        # done x3 + running, failed + queued x3, queued x2: a failure shows first.
        self.assertEqual([c["status"] for c in folded.cells], ["running", "failed", "queued"])
        self.assertEqual((folded.cells[1]["first"], folded.cells[1]["last"]), (5, 8))

    def test_the_run_page_shows_the_strip_while_it_polls(self):
        run = self.running_run()
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
        self.client.force_login(self.people["curator"])
        with self.assertNumQueries(5):  # session, user, roles, run, chunks
            response = self.client.get(
                reverse("run", args=[run.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress"
            )
        self.assertContains(response, 'class="chunk chunk-done"', count=3)
        self.assertContains(response, 'class="chunk chunk-failed"', count=1)
        self.assertContains(response, 'title="Chunk 4: Running · 0 of 4 answered"')
        self.assertContains(response, "1 chunk taken over after its worker died")
        self.assertContains(response, "10 chunks, shared by the workers:")


class ClaimAheadTests(TestCase):
    """A worker claims its next chunk while the last round of the current one is in flight."""

    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(12)

    def test_the_next_chunk_is_claimed_before_the_current_one_ends(self):
        with FakeOpenAIServer(answer_letter("A"), latency=0.05) as server:
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(server.base_url),
                concurrency=1,
                enqueue=False,
            )
            run = run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
        first, second, third = chunks_of(run)
        # Chunks of four items, one request in flight: each next chunk was claimed (and its
        # items read) while the last request of the one before was on its way.
        self.assertLess(second.started_at, first.finished_at)
        self.assertLess(third.started_at, second.finished_at)
        self.assertEqual(run.status, RunStatus.DONE)
        self.assertEqual({c.attempts for c in chunks_of(run)}, {1})

    def test_a_chunk_claimed_ahead_of_a_cancelled_run_ends_with_it(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(server.base_url),
                concurrency=1,
                enqueue=False,
            )

            def cancel_after_the_first_chunk(stored: int) -> None:
                if Prediction.objects.filter(run=run).count() >= 4:
                    run_services.run_cancel(run=run)

            run_services.run_execute(
                run_id=run.pk, poll_seconds=0.01, progress=cancel_after_the_first_chunk
            )
            sent = len(server.requests)
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.CANCELLED)
        # The second chunk had been claimed while the first one's last item was asked: it is
        # cancelled with the run, not put back; the third was never claimed.
        self.assertEqual({c.status for c in chunks_of(run)}, {RunStatus.CANCELLED})
        self.assertEqual([c.attempts for c in chunks_of(run)], [1, 1, 0])
        # What was sent was stored, and little was sent after the cancellation.
        self.assertEqual(run.predictions.count(), sent)
        self.assertLessEqual(sent, 4 + 2)


class JobsPageRunRowTests(TestCase):
    """The Jobs page counts a run's chunks and the ones taken over after their worker died."""

    def test_a_runs_row_counts_its_chunks_and_their_recoveries(self):
        from annotations.selectors.jobs import background_work

        benchmark, _items = make_run_benchmark(12)
        run = run_services.run_create(
            benchmark=benchmark,
            endpoint=make_endpoint("http://127.0.0.1:9/v1"),
            concurrency=1,
            enqueue=False,
        )
        first, second, _third = chunks_of(run)
        RunChunk.objects.filter(pk=first.pk).update(status=RunStatus.DONE, recoveries=1)
        RunChunk.objects.filter(pk=second.pk).update(status=RunStatus.DONE)
        Run.objects.filter(pk=run.pk).update(recoveries=1)  # its finish once, too
        [row] = [r for r in background_work() if (r["source"], r["row_id"]) == ("run", run.pk)]
        self.assertEqual((row["chunks_done"], row["chunks_total"], row["recovered"]), (2, 3, 2))
