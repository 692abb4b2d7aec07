"""Run pages for curators: list, start, follow, cancel, leaderboard."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from annotations.models import Prediction, Run, RunStatus
from annotations.services import runs as run_services
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_done_run, make_run_benchmark


@fast_passwords
class RunPagesTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(6, name="endo-runs")
        cls.good = make_done_run(
            cls.benchmark,
            cls.items,
            label="good-model",
            answers={i.source_index: i.answer for i in cls.items},
        )
        cls.bad = make_done_run(cls.benchmark, cls.items, label="first-guess", answers={})

    def login(self, who: str = "curator") -> None:
        self.client.force_login(self.people[who])


class RunListTests(RunPagesTestCase):
    url = reverse("runs")

    def test_it_lists_runs_with_progress_and_accuracy(self):
        self.login()
        with self.assertNumQueries(6):  # session, user, roles, runs, form (endpoints, benchmarks)
            response = self.client.get(self.url)
        self.assertContains(response, "good-model")
        self.assertContains(response, "100.0%")
        self.assertContains(response, "Baseline: random option")

    def test_the_query_count_does_not_grow_with_runs(self):
        for n in range(5):
            make_done_run(self.benchmark, self.items, label=f"more-{n}", answers={})
        self.login()
        with self.assertNumQueries(6):
            self.client.get(self.url)

    def test_it_refuses_a_post(self):
        self.login()
        self.assertEqual(self.client.post(self.url).status_code, 405)

    def test_anonymous_users_are_sent_to_login(self):
        response = self.client.get(self.url)
        self.assertRedirects(response, f"{reverse('login')}?next={self.url}")

    def test_reviewers_may_not_see_runs(self):
        self.login("reviewer")
        self.assertEqual(self.client.get(self.url).status_code, 403)


class RunCreateTests(RunPagesTestCase):
    url = reverse("run-create")

    def form(self, **overrides):
        data = {
            "source": "baseline:random",
            "benchmark": "endo-runs",
            "concurrency": "2",
            "with_image": "on",
            "field": "category",
            "value": "Lesion",
        }
        data.update(overrides)
        return data

    def test_it_creates_a_run_and_queues_it_after_commit(self):
        self.login()
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.client.post(self.url, self.form())
        run = Run.objects.latest("pk")
        self.assertRedirects(response, reverse("run", args=[run.pk]))
        self.assertEqual(len(callbacks), 1)
        self.assertEqual((run.total, run.concurrency, run.status), (3, 2, RunStatus.QUEUED))
        self.assertEqual(run.filters, {"category": ["Lesion"]})
        self.assertEqual(run.endpoint.baseline, "random")

    def test_an_llm_judge_is_chosen_in_the_form_and_shown_on_the_run(self):
        judge = run_services.endpoint_ensure_openai(
            name="judge-gpt", base_url="http://127.0.0.1:9/v1", model="judge-model"
        )
        self.login()
        page = self.client.get(reverse("runs"))
        self.assertContains(page, f'<option value="{judge.pk}">judge-gpt · judge-model</option>')
        with self.captureOnCommitCallbacks(execute=False):
            self.client.post(self.url, self.form(judge=str(judge.pk)))
        run = Run.objects.latest("pk")
        self.assertEqual(run.judge, judge)
        Prediction.objects.create(
            run=run, item=self.items[0], raw_text="the second one", extracted="B",
            judged_by_llm=True, hit=False,
        )  # fmt: skip
        Run.objects.filter(pk=run.pk).update(summary=run_services.run_summarize(run=run))
        detail = self.client.get(reverse("run", args=[run.pk]))
        self.assertContains(detail, "LLM judge: judge-gpt")
        self.assertContains(detail, "<b data-judged>1</b>")
        self.assertContains(detail, 'class="chip judge-chip"')

    def test_it_creates_a_new_openai_endpoint_from_the_form(self):
        self.login()
        data = self.form(
            source="new",
            name="local-vllm",
            base_url="http://127.0.0.1:8000/v1",
            model="qwen-vl",
            api_key_env="CLINREVIEW_KEY_VLLM",
        )
        with self.captureOnCommitCallbacks(execute=False):
            self.client.post(self.url, data)
        run = Run.objects.latest("pk")
        self.assertEqual(run.endpoint.model, "qwen-vl")
        self.assertEqual(run.endpoint.api_key_env, "CLINREVIEW_KEY_VLLM")

    def test_it_shows_errors_and_creates_nothing_when_no_item_matches(self):
        self.login()
        before = Run.objects.count()
        response = self.client.post(self.url, self.form(value="Nothing"))
        self.assertContains(response, "No item matches", status_code=400)
        self.assertEqual(Run.objects.count(), before)

    def test_it_refuses_a_get(self):
        self.login()
        self.assertEqual(self.client.get(self.url).status_code, 405)

    def test_anonymous_users_are_sent_to_login(self):
        response = self.client.post(self.url, self.form())
        self.assertEqual(response.status_code, 302)
        self.assertIn(reverse("login"), response["Location"])

    def test_reviewers_may_not_start_runs(self):
        self.login("reviewer")
        before = Run.objects.count()
        self.assertEqual(self.client.post(self.url, self.form()).status_code, 403)
        self.assertEqual(Run.objects.count(), before)


class RunDetailTests(RunPagesTestCase):
    def url(self, run=None, query: str = "") -> str:
        return reverse("run", args=[(run or self.bad).pk]) + query

    def test_it_shows_the_scores_and_predictions(self):
        self.login()
        # session, user, roles, run, count, chunks, page of predictions
        with self.assertNumQueries(7):
            response = self.client.get(self.url())
        self.assertContains(response, "first-guess")
        self.assertContains(response, "Overall accuracy")
        self.assertContains(response, "colonoscopy")
        self.assertEqual(len(response.context["page"].object_list), 6)

    def test_it_filters_wrong_answers_and_by_field(self):
        self.login()
        response = self.client.get(self.url(query="?wrong=1"))
        self.assertEqual({p.hit for p in response.context["page"]}, {False})
        self.assertEqual(response.context["page"].paginator.count, 5)
        response = self.client.get(self.url(query="?by=category=Lesion"))
        self.assertEqual({p.item.category for p in response.context["page"]}, {"Lesion"})

    def test_htmx_polls_get_the_progress_fragment_while_running(self):
        Run.objects.filter(pk=self.bad.pk).update(status=RunStatus.RUNNING, completed=3)
        self.login()
        response = self.client.get(
            self.url(), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress"
        )
        self.assertContains(response, 'hx-trigger="every 1s"')
        self.assertContains(response, "50%")
        self.assertNotContains(response, "<html")

    def test_htmx_polls_reload_the_page_once_the_run_has_ended(self):
        self.login()
        response = self.client.get(
            self.url(), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-progress"
        )
        self.assertEqual(response["HX-Refresh"], "true")

    def test_a_finished_run_page_does_not_poll(self):
        self.login()
        self.assertNotContains(self.client.get(self.url()), "every 1s")

    def test_it_refuses_a_post(self):
        self.login()
        self.assertEqual(self.client.post(self.url()).status_code, 405)

    def test_anonymous_users_are_sent_to_login(self):
        self.assertEqual(self.client.get(self.url()).status_code, 302)

    def test_adjudicators_may_not_see_a_run(self):
        self.login("adjudicator")
        self.assertEqual(self.client.get(self.url()).status_code, 403)


class HumanBaselineRunPageTests(RunPagesTestCase):
    """A curator ends a clinician's session early, or gives its items to another clinician."""

    def setUp(self):
        from annotations.services.human_baseline import human_answer_submit, human_baseline_open

        self.session = human_baseline_open(
            benchmark=self.benchmark,
            clinician=self.people["reviewer"],
            opened_by=self.people["curator"],
            limit=4,
        )
        human_answer_submit(
            run=self.session, item=self.items[0], user=self.people["reviewer"], letter="A"
        )
        self.login()

    def test_the_page_offers_to_end_the_session_and_to_give_it_to_another_clinician(self):
        response = self.client.get(reverse("run", args=[self.session.pk]))
        self.assertContains(response, "End session")
        self.assertNotContains(response, "Cancel run")
        self.assertEqual(
            [person.username for person in response.context["clinicians"]], ["bob", "carol"]
        )
        polled = self.client.get(
            reverse("run", args=[self.session.pk]),
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="run-progress",
        )
        self.assertContains(polled, "Give these items to")  # the form survives the polling
        model_page = self.client.get(reverse("run", args=[self.bad.pk]))
        self.assertNotContains(model_page, "Give these items to")

    def test_giving_the_items_to_another_clinician_opens_their_session(self):
        url = reverse("baseline-reassign", args=[self.session.pk])
        response = self.client.post(url, {"clinician": "carol"}, follow=True)
        given = Run.objects.get(kind="human", human=self.people["adjudicator"])
        self.assertRedirects(response, reverse("run", args=[given.pk]))
        self.assertContains(response, "Human baseline opened for carol: 4 items.")
        self.session.refresh_from_db()
        self.assertEqual((self.session.status, self.session.completed), ("cancelled", 1))
        self.assertEqual(self.session.summary["overall"]["n"], 1)

        unknown = self.client.post(url, {"clinician": "zed"}, follow=True)
        self.assertContains(unknown, "Unknown clinician.")
        same = self.client.post(url, {"clinician": "alice"}, follow=True)
        self.assertContains(same, "already this clinician")
        self.assertEqual(Run.objects.filter(kind="human").count(), 2)

    def test_only_curators_give_sessions_away(self):
        self.login("reviewer2")
        url = reverse("baseline-reassign", args=[self.session.pk])
        self.assertEqual(self.client.post(url, {"clinician": "bob"}).status_code, 403)
        self.assertEqual(self.client.get(url).status_code, 405)
        self.assertEqual(Run.objects.filter(kind="human").count(), 1)


class RunCancelTests(RunPagesTestCase):
    def test_it_cancels_a_running_run(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        self.login()
        response = self.client.post(reverse("run-cancel", args=[run.pk]))
        self.assertRedirects(response, reverse("run", args=[run.pk]))
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.CANCELLED)

    def test_a_finished_run_stays_done(self):
        self.login()
        self.client.post(reverse("run-cancel", args=[self.good.pk]))
        self.good.refresh_from_db()
        self.assertEqual(self.good.status, RunStatus.DONE)

    def test_it_refuses_a_get(self):
        self.login()
        self.assertEqual(
            self.client.get(reverse("run-cancel", args=[self.good.pk])).status_code, 405
        )

    def test_anonymous_and_reviewers_cannot_cancel(self):
        url = reverse("run-cancel", args=[self.good.pk])
        self.assertEqual(self.client.post(url).status_code, 302)
        self.login("reviewer")
        self.assertEqual(self.client.post(url).status_code, 403)


class RunRetryTests(RunPagesTestCase):
    def failed_run(self) -> Run:
        run = make_done_run(self.benchmark, self.items, label="flaky", answers={1: "A", 2: "B"})
        Prediction.objects.filter(run=run, item__source_index__gt=2).update(
            raw_text="", extracted="", hit=False, error="HTTP 503 after 3 attempts"
        )
        Run.objects.filter(pk=run.pk).update(failed=4)
        run.refresh_from_db()
        return run

    def test_the_page_offers_a_retry_of_a_run_with_errors_only(self):
        self.login()
        run = self.failed_run()
        self.assertContains(self.client.get(reverse("run", args=[run.pk])), "data-retry")
        self.assertNotContains(self.client.get(reverse("run", args=[self.good.pk])), "data-retry")

    def test_a_retry_clears_the_failed_answers_and_queues_the_run(self):
        run = self.failed_run()
        self.login()
        with self.captureOnCommitCallbacks() as queued:
            response = self.client.post(reverse("run-retry", args=[run.pk]))
        self.assertRedirects(response, reverse("run", args=[run.pk]), fetch_redirect_response=False)
        self.assertEqual(len(queued), 1)
        run.refresh_from_db()
        self.assertEqual((run.status, run.completed, run.failed), (RunStatus.QUEUED, 2, 0))
        self.assertEqual(sorted(run.predictions.values_list("extracted", flat=True)), ["A", "B"])
        self.assertEqual(run.summary["overall"]["n"], 2)  # scored on what is kept
        page = self.client.get(response["Location"])
        self.assertContains(page, "4 failed answers cleared; the run is queued again.")

    def test_nothing_to_retry_is_said_and_nothing_changes(self):
        self.login()
        response = self.client.post(reverse("run-retry", args=[self.good.pk]), follow=True)
        self.assertContains(response, "nothing to retry")
        self.good.refresh_from_db()
        self.assertEqual(self.good.status, RunStatus.DONE)

    def test_only_curators_retry_and_only_by_post(self):
        url = reverse("run-retry", args=[self.good.pk])
        self.assertEqual(self.client.post(url).status_code, 302)
        self.login("reviewer")
        self.assertEqual(self.client.post(url).status_code, 403)
        self.login()
        self.assertEqual(self.client.get(url).status_code, 405)


class LeaderboardTests(RunPagesTestCase):
    url = reverse("leaderboard", args=["endo-runs"])

    def test_it_ranks_runs_with_a_chart_and_per_field_columns(self):
        self.login()
        with self.assertNumQueries(5):  # session, user, roles, benchmark, runs
            response = self.client.get(self.url)
        board = response.context["board"]
        self.assertEqual([row.run.label for row in board.rows], ["good-model", "first-guess"])
        self.assertEqual(board.field, "category")
        self.assertEqual(board.columns, ["Anatomy", "Lesion"])
        self.assertContains(response, "<svg")
        self.assertContains(response, "<rect", count=2)

    def test_it_sorts_by_a_column_and_switches_field(self):
        Prediction.objects.filter(run=self.bad, item__category="Anatomy").update(hit=True)
        run_services.run_finish(run_id=self.bad.pk)
        self.login()
        response = self.client.get(self.url + "?field=scene&sort=label")
        self.assertEqual(response.context["board"].field, "scene")
        self.assertEqual(
            [row.run.label for row in response.context["board"].rows], ["first-guess", "good-model"]
        )

    def test_it_refuses_a_post(self):
        self.login()
        self.assertEqual(self.client.post(self.url).status_code, 405)

    def test_anonymous_and_reviewers_are_kept_out(self):
        self.assertEqual(self.client.get(self.url).status_code, 302)
        self.login("reviewer")
        self.assertEqual(self.client.get(self.url).status_code, 403)


class RunReadingsTests(RunPagesTestCase):
    """Every reading of every reply on the run page: VLMEvalKit's, the judge's, the lenient one."""

    def old_run(self) -> Run:
        """A run read by the rules before VLMEvalKit's: '答案是B' was read as B then."""
        run = make_done_run(self.benchmark, self.items, label="older", answers={})
        Run.objects.filter(pk=run.pk).update(vlmeval_commit="")
        Prediction.objects.filter(run=run, item=self.items[0]).update(
            raw_text="答案是B", extracted="B", vlmeval_letter="B", hit=True
        )  # items[0] (index 1) has gold B
        run.refresh_from_db()
        return run

    def test_an_older_run_says_so_and_is_read_again_as_vlmevalkit_reads(self):
        run = self.old_run()
        self.login()
        page = self.client.get(reverse("run", args=[run.pk]))
        self.assertContains(page, "Read by the rules used before VLMEvalKit")
        self.assertContains(page, "data-rescore")
        response = self.client.post(reverse("run-rescore", args=[run.pk]), follow=True)
        self.assertContains(response, "Read again as VLMEvalKit e8e78f0 reads: 1 answer changed.")
        prediction = run.predictions.get(item=self.items[0])
        self.assertEqual(
            (prediction.vlmeval_letter, prediction.extracted, prediction.hit), ("", "", False)
        )
        self.assertEqual((prediction.lenient_letter, prediction.lenient_hit), ("B", True))
        run.refresh_from_db()
        self.assertEqual(run.vlmeval_commit, "e8e78f0")
        self.assertEqual(run.summary["overall"]["hits"], 1)  # index 5 ("A", gold A) only
        self.assertEqual(run.summary["lenient"]["overall"]["hits"], 2)
        self.assertNotContains(response, "data-rescore")

    def test_only_curators_read_again_and_only_by_post(self):
        run = self.old_run()
        url = reverse("run-rescore", args=[run.pk])
        self.assertEqual(self.client.post(url).status_code, 302)
        self.login("reviewer")
        self.assertEqual(self.client.post(url).status_code, 403)
        self.login()
        self.assertEqual(self.client.get(url).status_code, 405)
        run.refresh_from_db()
        self.assertEqual(run.vlmeval_commit, "")

    def test_a_running_run_is_not_read_again(self):
        run = self.old_run()
        Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
        self.login()
        response = self.client.post(reverse("run-rescore", args=[run.pk]), follow=True)
        self.assertContains(response, "Wait until the run has ended.")
        self.assertEqual(run.predictions.get(item=self.items[0]).extracted, "B")

    def test_the_unmatched_replies_show_both_readings(self):
        run = make_done_run(
            self.benchmark, self.items, label="chatty", answers={1: "答案是B", 2: "C", 3: "maybe"}
        )
        run_services.run_rescore(run=run)
        self.login()
        page = self.client.get(reverse("run", args=[run.pk]))
        self.assertNotContains(page, 'data-col="lenient"')  # not a lenient run
        self.assertContains(page, "review them")
        response = self.client.get(reverse("run", args=[run.pk]) + "?unmatched=1")
        shown = [p.item.source_index for p in response.context["page"]]
        self.assertEqual(shown, [1, 3])
        html = response.content.decode()
        self.assertIn('<td data-col="lenient"><span class="letter lenient-only">B</span>', html)
        self.assertIn('<td data-col="vlmeval"><span class="muted small">unmatched</span>', html)

    def test_a_lenient_run_shows_its_lenient_score_beside_vlmevalkits(self):
        run = make_done_run(self.benchmark, self.items, label="lenient", answers={1: "答案是B"})
        Run.objects.filter(pk=run.pk).update(lenient=True)
        run_services.run_rescore(run=Run.objects.get(pk=run.pk))
        self.login()
        page = self.client.get(reverse("run", args=[run.pk]))
        self.assertContains(page, "Overall accuracy (VLMEvalKit)")
        self.assertContains(page, 'data-testid="lenient"')
        self.assertContains(page, "1 reply read only leniently")
        self.assertContains(page, 'data-col="lenient"', count=6)
        self.assertContains(page, "VLMEvalKit's table")
        self.assertContains(page, '<td class="num">none</td><td class="num">0.166667</td>')
