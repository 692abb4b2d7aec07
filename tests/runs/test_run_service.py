"""Runs through the real service and the real `openai` client against the loopback fake server."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction
from django.test import TestCase, TransactionTestCase

from annotations.models import Prediction, Run, RunStatus
from annotations.scoring import extract_mcq
from annotations.scoring.judge import build_judge_prompt, judge_fallback
from annotations.services import runs as run_services
from annotations.services.errors import DomainError
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_endpoint, make_run_benchmark
from tests.support.fake_openai import (
    FakeOpenAIServer,
    Reply,
    answer_letter,
    flaky,
    image_count,
    prompt_text,
    varied_formats,
)


def execute(run: Run, **kwargs) -> Run | None:
    return run_services.run_execute(run_id=run.pk, poll_seconds=0.05, **kwargs)


@fast_passwords
class RunCreateTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(8)
        cls.baseline = run_services.endpoint_ensure_baseline(baseline="first")

    def create(self, **kwargs) -> Run:
        kwargs.setdefault("enqueue", False)
        return run_services.run_create(benchmark=self.benchmark, endpoint=self.baseline, **kwargs)

    def test_it_counts_the_items_matching_the_filters(self):
        self.items[0].status = "agreed"
        self.items[0].save()
        run = self.create(filters={"category": "Lesion", "limit": "3"})
        self.assertEqual(run.total, 3)
        self.assertEqual(run.filters, {"category": ["Lesion"], "limit": 3})
        self.assertEqual(self.create(filters={"status": "curated"}).total, 1)
        self.assertEqual(run.status, RunStatus.QUEUED)
        self.assertEqual(run.kind, "baseline")

    def test_it_refuses_unknown_fields_empty_selections_and_bad_concurrency(self):
        with self.assertRaises(DomainError):
            self.create(filters={"question": "x"})
        with self.assertRaises(DomainError):
            self.create(filters={"category": "Nothing"})
        with self.assertRaises(DomainError):
            self.create(concurrency=0)
        self.assertEqual(Run.objects.count(), 0)

    def test_it_enqueues_the_task_only_after_commit(self):
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            run = self.create(enqueue=True)
        self.assertEqual(len(callbacks), 1)
        self.assertEqual(Run.objects.get().pk, run.pk)

    def test_a_run_without_the_image_is_labelled_so(self):
        run = self.create(with_image=False)
        self.assertFalse(run.with_image)
        self.assertIn("no image", run.label)


class BaselineRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(8)

    def run_baseline(self, name: str) -> Run:
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline=name),
            enqueue=False,
        )
        return execute(run)

    def test_the_first_option_baseline_hits_the_items_whose_answer_is_a(self):
        run = self.run_baseline("first")
        self.assertEqual(run.status, RunStatus.DONE)
        self.assertEqual((run.completed, run.failed), (8, 0))
        overall = run.summary["overall"]
        self.assertEqual((overall["n"], overall["hits"]), (8, 2))
        self.assertAlmostEqual(overall["accuracy"], 0.25)
        self.assertLess(overall["low"], 0.25)
        self.assertGreater(overall["high"], 0.25)
        self.assertEqual(set(run.summary["by"]["category"]), {"Lesion", "Anatomy"})
        self.assertEqual(set(run.summary["by"]["scene"]), {"colonoscopy", "gastroscopy"})
        self.assertEqual(run.summary["by"]["category"]["Lesion"]["n"], 4)
        self.assertIsNotNone(run.finished_at)

    def test_the_random_baseline_is_reproducible(self):
        first = self.run_baseline("random")
        second = self.run_baseline("random")
        answers = [
            list(r.predictions.order_by("item__source_index").values_list("raw_text", flat=True))
            for r in (first, second)
        ]
        self.assertEqual(answers[0], answers[1])

    def test_the_frequent_baseline_answers_the_commonest_letter_of_each_category(self):
        run = self.run_baseline("frequent")
        # Lesion items (odd indexes) have answers B, D, B, D: ties go to the earliest letter.
        lesion = run.predictions.filter(item__category="Lesion").values_list("raw_text", flat=True)
        self.assertEqual(set(lesion), {"B"})

    def test_executing_a_finished_run_again_does_nothing(self):
        run = self.run_baseline("first")
        self.assertIsNone(execute(run))
        self.assertEqual(Prediction.objects.filter(run=run).count(), 8)


class OpenAIRunTests(TestCase):
    """The real `openai` client, our provider and our service, against a loopback server."""

    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(10)

    def run_against(self, server: FakeOpenAIServer, **kwargs) -> Run:
        params = kwargs.pop("params", {})
        run = run_services.run_create(
            benchmark=kwargs.pop("benchmark", self.benchmark),
            endpoint=make_endpoint(server.base_url, **params),
            enqueue=False,
            concurrency=kwargs.pop("concurrency", 3),
            **kwargs,
        )
        return execute(run)

    def test_answers_in_varied_formats_are_scored_as_vlmevalkit_reads_them(self):
        with FakeOpenAIServer(varied_formats) as server:
            run = self.run_against(server)
            requests = server.requests
        self.assertEqual(len(requests), 10)
        self.assertTrue(all(image_count(r) == 1 for r in requests))
        self.assertTrue(all("Please select the correct answer" in prompt_text(r) for r in requests))
        predictions = list(run.predictions.select_related("item"))
        self.assertEqual(len(predictions), 10)
        for prediction in predictions:
            expected = extract_mcq(prediction.raw_text, dict(prediction.item.lettered_options))
            self.assertEqual(prediction.extracted, expected or "")
            self.assertEqual(prediction.hit, bool(expected) and expected == prediction.item.answer)
            self.assertIsNotNone(prediction.prompt_tokens)
            self.assertGreater(prediction.latency_ms, 0)
        self.assertEqual(run.summary["overall"]["hits"], sum(p.hit for p in predictions))
        refusals = sum(p.raw_text.startswith("I cannot") for p in predictions)
        self.assertEqual(run.summary["refusals"], refusals)

    def test_a_429_with_retry_after_is_retried_and_every_attempt_counted(self):
        with FakeOpenAIServer(flaky(first_n_fail=2, status=429, retry_after="0")) as server:
            run = self.run_against(server)
            self.assertEqual(len(server.requests), 30)
        self.assertEqual(run.failed, 0)
        self.assertEqual(set(run.predictions.values_list("attempts", flat=True)), {3})

    def test_a_500_is_retried_with_backoff(self):
        with FakeOpenAIServer(flaky(first_n_fail=1, status=500, retry_after=None)) as server:
            run = self.run_against(server)
        self.assertEqual((run.completed, run.failed), (10, 0))
        self.assertEqual(run.summary["overall"]["n"], 10)

    def test_a_server_that_keeps_failing_records_an_error_per_item(self):
        with FakeOpenAIServer(flaky(first_n_fail=99, status=503, retry_after="0")) as server:
            run = self.run_against(server, params={"max_retries": 1})
        self.assertEqual(run.status, RunStatus.DONE)
        self.assertEqual((run.completed, run.failed), (10, 10))
        errors = set(run.predictions.values_list("error", flat=True))
        self.assertTrue(all("exhausted" in e and "503" in e for e in errors))
        self.assertFalse(run.predictions.filter(hit=True).exists())
        self.assertEqual(run.summary["overall"]["accuracy"], 0.0)

    def test_a_slow_answer_times_out_and_is_recorded_as_an_error(self):
        def slow_for_one(request_json, attempt_no):
            if "frame 3?" in prompt_text(request_json):
                return Reply(text="A", delay=1.0)
            return Reply(text="A")

        with FakeOpenAIServer(slow_for_one) as server:
            run = self.run_against(server, params={"timeout": 0.3, "max_retries": 1})
        slow = run.predictions.get(item__source_index=3)
        self.assertIn("timed out", slow.error)
        self.assertEqual(run.failed, 1)
        self.assertEqual(run.predictions.exclude(error="").count(), 1)

    def test_malformed_json_is_retried_once_then_recorded(self):
        with FakeOpenAIServer(lambda body, n: Reply(raw_body=b'{"choices": [')) as server:
            run = self.run_against(server)
            self.assertEqual(len(server.requests), 20)  # one retry per item, no more
        self.assertTrue(
            all("malformed" in e for e in run.predictions.values_list("error", flat=True))
        )

    def test_a_run_without_the_image_sends_no_image(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            self.run_against(server, with_image=False)
            self.assertTrue(all(image_count(r) == 0 for r in server.requests))

    def test_medqdeg_items_get_the_medqdeg_prompt_and_extraction(self):
        benchmark, _items = make_run_benchmark(
            4,
            family="medqdeg",
            modality="CT",
            degradation_type="low_dose",
            degradation_severity="mild",
        )
        with FakeOpenAIServer(answer_letter("a")) as server:
            run = self.run_against(server, benchmark=benchmark)
            prompts = [prompt_text(r) for r in server.requests]
        self.assertTrue(
            all(
                p.endswith("Answer with the option letter from the given choices directly.")
                for p in prompts
            )
        )
        # MedQ-DEG upper-cases first: a bare "a" is option A (the generic rule would not read it).
        self.assertEqual(set(run.predictions.values_list("extracted", flat=True)), {"A"})
        self.assertEqual(run.summary["overall"]["hits"], 1)
        self.assertEqual(list(run.summary["by"]["degradation_type"]), ["low_dose"])
        self.assertEqual(list(run.summary["by"]["modality"]), ["CT"])
        # MedQ-DEG-Bench's own score dict, in its key order.
        vlmeval = run.summary["vlmeval"]
        self.assertEqual(
            vlmeval["header"],
            ["Overall", "Total", "Modality_CT", "DegType_low_dose", "Severity_mild"],
        )
        self.assertEqual(vlmeval["rows"], [[0.25, 4, 0.25, 0.25, 0.25]])

    def test_the_api_key_comes_from_the_named_environment_variable(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            endpoint = make_endpoint(server.base_url, name="keyed")
            endpoint.api_key_env = "CLINREVIEW_KEY_TEST"
            endpoint.save()
            run = run_services.run_create(
                benchmark=self.benchmark, endpoint=endpoint, enqueue=False
            )
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("CLINREVIEW_KEY_TEST", "sk-from-env")
                execute(run)
            headers = server.request_headers
        self.assertTrue(all(h["authorization"] == "Bearer sk-from-env" for h in headers))

    def test_a_missing_api_key_variable_fails_the_run_with_a_clear_message(self):
        endpoint = make_endpoint("http://127.0.0.1:9/v1", name="nokey")
        endpoint.api_key_env = "CLINREVIEW_KEY_UNSET_VARIABLE"
        endpoint.save()
        run = run_services.run_create(benchmark=self.benchmark, endpoint=endpoint, enqueue=False)
        with self.assertRaises(DomainError):
            execute(run)
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.FAILED)
        self.assertIn("CLINREVIEW_KEY_UNSET_VARIABLE", run.error)


class ResumeAndCancelTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(12)

    def test_re_executing_a_half_finished_run_asks_only_the_rest_and_duplicates_nothing(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            run = run_services.run_create(
                benchmark=self.benchmark, endpoint=make_endpoint(server.base_url), enqueue=False
            )
            # A worker died after storing six predictions: the run is still RUNNING.
            Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, completed=6)
            for item in self.items[:6]:
                Prediction.objects.create(
                    run=run, item=item, raw_text="B", extracted="B", hit=False
                )
            run = execute(run)
            asked = {prompt_text(r).split("frame ")[1].split("?")[0] for r in server.requests}
        self.assertEqual(len(server.requests), 6)
        self.assertEqual(asked, {str(item.source_index) for item in self.items[6:]})
        self.assertEqual(run.status, RunStatus.DONE)
        self.assertEqual(run.completed, 12)
        for item in self.items:
            self.assertEqual(Prediction.objects.filter(run=run, item=item).count(), 1)
        # The stored answers of the first worker are kept, not overwritten.
        self.assertEqual(run.predictions.filter(raw_text="B").count(), 6)

    def test_a_cancelled_run_is_not_executed(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        self.assertTrue(run_services.run_cancel(run=run))
        self.assertFalse(run_services.run_cancel(run=run))
        self.assertIsNone(execute(run))
        self.assertEqual(run.predictions.count(), 0)

    def test_cancelling_mid_run_stops_submitting_and_keeps_what_was_answered(self):
        cancelled = threading.Event()

        def answer(request_json, attempt_no):
            # Once the curator has cancelled, answers take far longer than the executor's
            # cancel poll, so the run must stop long before the 12 items are all answered.
            return Reply(text="A", delay=0.3 if cancelled.is_set() else 0.0)

        with FakeOpenAIServer(answer) as server:
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(server.base_url),
                concurrency=2,
                enqueue=False,
            )
            stored = []

            def on_progress(n: int) -> None:
                stored.append(n)
                if len(stored) == 2:
                    run_services.run_cancel(run=run)
                    cancelled.set()

            run = execute(run, progress=on_progress)
            sent = len(server.requests)
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.CANCELLED)
        self.assertLess(run.completed, 12)
        self.assertEqual(run.completed, sent)  # everything sent was stored, nothing lost
        self.assertEqual(run.summary["overall"]["n"], run.completed)


class RetryTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(6)

    def test_a_retry_asks_again_only_for_the_failed_items_and_keeps_the_good_answers(self):
        recovered = threading.Event()

        def frame(request_json) -> int:
            return int(prompt_text(request_json).split("frame ")[1].split("?")[0])

        def odd_frames_fail_until_recovered(request_json, attempt_no):
            if recovered.is_set():
                return Reply(text="B")
            return Reply(status=503, text="") if frame(request_json) % 2 else Reply(text="A")

        with FakeOpenAIServer(odd_frames_fail_until_recovered) as server:
            endpoint = make_endpoint(server.base_url, max_retries=1)
            run = run_services.run_create(
                benchmark=self.benchmark, endpoint=endpoint, enqueue=False
            )
            run = execute(run)
            self.assertEqual((run.status, run.completed, run.failed), (RunStatus.DONE, 6, 3))
            good = dict(run.predictions.filter(error="").values_list("item_id", "pk"))

            with self.captureOnCommitCallbacks() as queued:
                cleared = run_services.run_retry(run=run)
            self.assertEqual(cleared, 3)
            self.assertEqual(len(queued), 1)  # the run's task, once committed
            run.refresh_from_db()
            self.assertEqual((run.status, run.completed, run.failed), (RunStatus.QUEUED, 3, 0))
            self.assertIsNone(run.finished_at)

            recovered.set()
            asked_before = len(server.requests)
            run = execute(run)
            asked = sorted(frame(r) for r in server.requests[asked_before:])
        self.assertEqual(asked, [1, 3, 5])
        self.assertEqual((run.status, run.completed, run.failed), (RunStatus.DONE, 6, 0))
        kept = dict(run.predictions.filter(raw_text="A").values_list("item_id", "pk"))
        self.assertEqual(kept, good)  # the good answers are the same rows, untouched
        self.assertEqual(run.predictions.filter(raw_text="B").count(), 3)
        self.assertEqual(run.summary["overall"]["n"], 6)

    def test_a_cancelled_run_is_resumed_where_it_stopped(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        for item in self.items[:2]:
            Prediction.objects.create(run=run, item=item, raw_text="A", extracted="A", hit=True)
        run_services.run_cancel(run=run)
        self.assertEqual(run_services.run_retry(run=run, enqueue=False), 0)
        run = execute(run)
        self.assertEqual((run.status, run.completed), (RunStatus.DONE, 6))

    def test_what_cannot_be_retried_is_refused(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        with self.assertRaisesMessage(DomainError, "Only an ended run"):
            run_services.run_retry(run=run, enqueue=False)  # still queued
        run = execute(run)
        with self.assertRaisesMessage(DomainError, "nothing to retry"):
            run_services.run_retry(run=run, enqueue=False)  # every item answered
        Run.objects.filter(pk=run.pk).update(kind="human")
        run.refresh_from_db()
        with self.assertRaisesMessage(DomainError, "human baseline"):
            run_services.run_retry(run=run, enqueue=False)
        self.assertEqual(Run.objects.get(pk=run.pk).status, RunStatus.DONE)


class JudgeTests(TestCase):
    """An LLM judge (a second loopback server) reads the answers the rules cannot."""

    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(6)

    @staticmethod
    def frame(request_json) -> int:
        return int(prompt_text(request_json).split("frame ")[1].split("?")[0])

    def model(self, request_json, attempt_no):
        # Frames 1-2 answer plainly (the rules read them); the others ramble.
        if self.frame(request_json) <= 2:
            return Reply(text="A")
        return Reply(text="Looking at the mucosa, I would lean towards the second finding.")

    def run_with_judge(self, judge_script, **params):
        with (
            FakeOpenAIServer(self.model) as model_server,
            FakeOpenAIServer(judge_script) as judge_server,
        ):
            judge = make_endpoint(judge_server.base_url, name="judge", **params)
            run = run_services.run_create(
                benchmark=self.benchmark,
                endpoint=make_endpoint(model_server.base_url),
                judge=judge,
                enqueue=False,
            )
            run = execute(run)
            return run, list(judge_server.requests)

    def test_the_judge_reads_only_the_unmatched_answers_and_is_recorded_as_such(self):
        def judge(request_json, attempt_no):
            # "Z" (no option) for frame 3, else the second option.
            return Reply(text="Z" if self.frame(request_json) == 3 else "**B**")

        run, asked = self.run_with_judge(judge)
        self.assertEqual(sorted(self.frame(r) for r in asked), [3, 4, 5, 6])
        prompt = prompt_text(asked[0])
        first = next(i for i in self.items if f"frame {i.source_index}?" in prompt)
        reply = "Looking at the mucosa, I would lean towards the second finding."
        expected = build_judge_prompt(
            question=first.question, options=dict(first.lettered_options), reply=reply
        )
        self.assertEqual(prompt, expected)  # VLMEvalKit's prompt, word for word
        self.assertIn("Answer: Looking at the mucosa", prompt)
        self.assertIn("A. Polyp", prompt)
        self.assertEqual(image_count(asked[0]), 0)  # the judge reads text only
        by_frame = {p.item.source_index: p for p in run.predictions.select_related("item")}
        self.assertEqual([by_frame[i].judged_by_llm for i in range(1, 7)], [False] * 2 + [True] * 4)
        self.assertEqual(by_frame[3].extracted, "")  # the judge said Z: still unmatched
        for index in (4, 5, 6):
            prediction = by_frame[index]
            self.assertEqual((prediction.extracted, prediction.judge_letter), ("B", "B"))
            self.assertEqual(prediction.vlmeval_letter, "")  # the rules' own reading is kept
            self.assertEqual(prediction.hit, prediction.item.answer == "B")
            self.assertFalse(prediction.judge_drawn)
        self.assertEqual((by_frame[1].vlmeval_letter, by_frame[1].judge_letter), ("A", ""))
        self.assertEqual((run.summary["judged"], run.summary["unmatched"]), (4, 1))
        self.assertEqual(run.failed, 0)

    def test_a_judge_that_keeps_failing_gives_vlmevalkits_drawn_letter_marked_as_drawn(self):
        run, asked = self.run_with_judge(flaky(first_n_fail=99, status=503), max_retries=1)
        # VLMEvalKit asks its judge three times (each call here is two HTTP attempts), then
        # draws a letter among the options and Z: seeded by run and item, marked as drawn.
        self.assertEqual(len(asked), 4 * 3 * 2)
        self.assertEqual(run.failed, 0)
        drawn = run.predictions.filter(judge_drawn=True).select_related("item")
        self.assertEqual(drawn.count(), 4)
        for prediction in drawn:
            key = f"{self.benchmark.name}:{prediction.item.source_index}"
            expected = judge_fallback(
                options=dict(prediction.item.lettered_options), seed=f"{run.pk}:{key}"
            )
            self.assertTrue(prediction.judged_by_llm)
            self.assertEqual(prediction.judge_letter, "" if expected == "Z" else expected)
            self.assertEqual(prediction.extracted, prediction.judge_letter)
            self.assertEqual(prediction.hit, expected == prediction.item.answer)
            self.assertEqual(prediction.vlmeval_letter, "")  # exact matching read nothing
        self.assertEqual((run.summary["judged"], run.summary["drawn"]), (4, 4))

    def test_a_judge_reply_it_cannot_read_is_asked_again(self):
        def judge(request_json, attempt_no):
            return Reply(text="I think it is the second one" if attempt_no == 1 else "B")

        run, asked = self.run_with_judge(judge)
        self.assertEqual(len(asked), 8)  # two calls for each of the four
        judged = run.predictions.filter(judged_by_llm=True)
        self.assertEqual(set(judged.values_list("judge_letter", "judge_drawn")), {("B", False)})

    def test_a_baseline_cannot_judge(self):
        with self.assertRaisesMessage(DomainError, "The judge must be a model endpoint"):
            run_services.run_create(
                benchmark=self.benchmark,
                endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
                judge=run_services.endpoint_ensure_baseline(baseline="random"),
                enqueue=False,
            )


class ThreadedWritesTests(TransactionTestCase):
    """The pool threads never touch the database: committed rows only, as in a worker."""

    def test_a_concurrent_run_on_committed_rows_stores_every_item_once(self):
        benchmark, items = make_run_benchmark(20)
        with FakeOpenAIServer(answer_letter("B"), latency=0.02) as server:
            with transaction.atomic():
                run = run_services.run_create(
                    benchmark=benchmark,
                    endpoint=make_endpoint(server.base_url),
                    concurrency=8,
                    enqueue=False,
                )
            run = execute(run)
        self.assertEqual(run.completed, 20)
        self.assertEqual(Prediction.objects.filter(run=run).values("item").distinct().count(), 20)
