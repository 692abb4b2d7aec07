"""Clinicians grade generated reports blind, side by side: two models' reports, or a model's beside
the reference report; the report rubric, Bradley–Terry ratings, agreement between graders and
with ROUGE-L / BLEU-4."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from annotations.models import Assignment, Grade, GradingSession
from annotations.scoring import bleu4, rouge_l, weighted_kappa
from annotations.selectors import grading as grading_selectors
from annotations.selectors.report_grading import report_agreement
from annotations.services import grading as grading_services
from annotations.services.errors import DomainError
from tests.factories import make_benchmark, make_item, make_personas
from tests.runs.helpers import fast_passwords, make_report_run

REFERENCES = [
    "The antral wall is thickened with an ulcerated mass. No enlarged lymph nodes.",
    "A 2 cm lesion at the cardia with perigastric lymph nodes. The liver is normal.",
    "Diffuse wall thickening of the gastric body. Small ascites.",
]
# Model A is close to the references, model B far from them.
REPORTS_A = [
    "The antral wall is thickened with an ulcerated mass. No lymph nodes.",
    "A 2 cm lesion at the cardia with lymph nodes. Normal liver.",
    "Wall thickening of the gastric body.",
]
REPORTS_B = [
    "Normal stomach.",
    "The liver is normal.",
    "Diffuse thickening with ascites in the gastric body.",
]


@fast_passwords
class ReportGradingTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("gx-reports", family="gastricx")
        cls.reports = [
            make_item(
                cls.benchmark,
                index=n + 1,
                kind="open",
                question=f"Write the CT report of case {n}.",
                options=[],
                answer="",
                reference=reference,
                target={"report": "ct"},
            )
            for n, reference in enumerate(REFERENCES)
        ]
        cls.mcq = make_item(cls.benchmark, index=10)
        items = [*cls.reports, cls.mcq]
        cls.run_a = make_report_run(
            cls.benchmark, items, label="secret-alpha", texts=[*REPORTS_A, "A"]
        )
        cls.run_b = make_report_run(
            cls.benchmark, items, label="secret-beta", texts=[*REPORTS_B, "B"]
        )
        curator = cls.people["curator"]
        cls.pair = grading_services.grading_session_create(
            run_a=cls.run_a, run_b=cls.run_b, task="report_generation", created_by=curator
        )
        cls.against_reference = grading_services.grading_session_create(
            run_a=cls.run_b, run_b=None, task="report_generation", created_by=curator
        )
        for slot, who in enumerate(("reviewer", "reviewer2"), start=1):
            Assignment.objects.create(
                item=cls.mcq, reviewer=cls.people[who], slot=slot, completed_at=timezone.now()
            )

    def grade(self, who, item, preference="left", session=None, **rubric) -> Grade:
        sides = {"left": {}, "right": {}}
        for key, value in rubric.items():
            side, criterion = key.split("_", 1)
            sides[side][criterion] = value
        return grading_services.grade_submit(
            session=session or self.pair,
            item=item,
            grader=self.people[who],
            preference=preference,
            rubric=sides,
        )

    def a_on_left(self, who, item, session=None) -> bool:
        return grading_services.grade_run_a_on_left(
            session=session or self.pair, item=item, grader=self.people[who]
        )


class ReportSessionTests(ReportGradingTestCase):
    def test_a_report_session_shares_only_the_generated_reports(self):
        shared = list(grading_selectors.grading_shared_items(self.pair))
        self.assertEqual(shared, self.reports)
        self.assertEqual(
            list(grading_selectors.grading_shared_items(self.against_reference)), self.reports
        )

    def test_the_session_list_counts_report_and_reference_sessions_in_one_query(self):
        mixed = grading_services.grading_session_create(
            run_a=self.run_a, run_b=self.run_b, created_by=self.people["curator"]
        )
        with self.assertNumQueries(2):  # the viewer's roles (scope), the sessions with counts
            progress = grading_selectors.grading_sessions(viewer=self.people["curator"])
        totals = {p.session.pk: p.total for p in progress}
        self.assertEqual(totals, {self.pair.pk: 3, self.against_reference.pk: 3, mixed.pk: 4})

    def test_only_reports_are_graded_against_the_reference(self):
        with self.assertRaises(DomainError):
            grading_services.grading_session_create(
                run_a=self.run_a, run_b=None, created_by=self.people["curator"]
            )

    def test_a_report_grade_keeps_the_report_rubric(self):
        grade = self.grade(
            "reviewer",
            self.reports[0],
            left_correct_findings=2,
            left_omissions=1,
            left_hallucinations=0,
            left_overall=4,
            right_overall=2,
        )
        self.assertEqual(
            grade.rubric,
            {
                "left": {"correct_findings": 2, "omissions": 1, "hallucinations": 0, "overall": 4},
                "right": {"overall": 2},
            },
        )

    def test_it_refuses_scores_off_the_scale_and_the_answer_rubric(self):
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.reports[0], left_overall=0)
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.reports[0], left_hallucinations=4)
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.reports[0], left_accuracy=2)
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.mcq)
        self.assertEqual(Grade.objects.count(), 0)

    def test_beside_the_reference_one_side_is_the_reference_report(self):
        item = self.reports[1]
        grade = self.grade("reviewer", item, "left", session=self.against_reference)
        on_left = self.a_on_left("reviewer", item, self.against_reference)
        model_side = grade.left_prediction if on_left else grade.right_prediction
        reference_side = grade.right_prediction if on_left else grade.left_prediction
        self.assertEqual(model_side.run_id, self.run_b.pk)
        self.assertIsNone(reference_side)


class ReportRatingsTests(ReportGradingTestCase):
    def prefer(self, who, item, run, session=None, **rubric) -> Grade:
        """Prefer `run`'s report (None: the reference), whatever side it is on."""
        session = session or self.pair
        a_left = self.a_on_left(who, item, session)
        run_a_wanted = run is not None and run.pk == session.run_a_id
        preference = "left" if a_left == run_a_wanted else "right"
        return self.grade(who, item, preference, session=session, **rubric)

    def test_the_reference_is_a_player_in_the_bradley_terry_ratings(self):
        for item in self.reports:
            self.prefer("reviewer", item, None, session=self.against_reference)
        ratings = grading_selectors.grading_ratings(task="report_generation", n_boot=50)
        names = [row["model"] for row in ratings.ratings]
        self.assertEqual(names, ["Reference reports", f"#{self.run_b.pk} secret-beta"])
        # Against run A's other session nothing was graded: only the reference and run B play.
        self.assertEqual(ratings.comparisons, 3)

    def test_graders_agreement_and_the_metrics_agreement_are_computed_per_report(self):
        # Two graders, every report of the pair session; their overall grades per report.
        overall = {
            "reviewer": {"a": [5, 4, 3], "b": [1, 2, 3]},
            "reviewer2": {"a": [5, 3, 3], "b": [2, 2, 4]},
        }
        for who, grades in overall.items():
            for n, item in enumerate(self.reports):
                a_left = self.a_on_left(who, item)
                a_side, b_side = ("left", "right") if a_left else ("right", "left")
                prefer_a = grades["a"][n] >= grades["b"][n]
                self.grade(
                    who,
                    item,
                    a_side if prefer_a else b_side,
                    **{f"{a_side}_overall": grades["a"][n], f"{b_side}_overall": grades["b"][n]},
                )
        agreement = report_agreement(benchmark=self.benchmark)
        self.assertEqual(agreement.grades, 6)
        first = [*overall["reviewer"]["a"], *overall["reviewer"]["b"]]
        second = [*overall["reviewer2"]["a"], *overall["reviewer2"]["b"]]
        self.assertEqual(agreement.graders["pairs"], 6)
        self.assertAlmostEqual(
            agreement.graders["kappa"], weighted_kappa(first, second, [1, 2, 3, 4, 5])
        )
        self.assertAlmostEqual(agreement.graders["exact"], 3 / 6)  # 5-5, 3-3, 2-2
        self.assertAlmostEqual(agreement.graders["within_one"], 1.0)
        means = {row["model"]: row["overall"] for row in agreement.models}
        self.assertAlmostEqual(means[f"#{self.run_a.pk} secret-alpha"], (5 + 4 + 3 + 5 + 3 + 3) / 6)
        # Spearman of the six reports' mean grade with their ROUGE-L, checked against scipy.
        from scipy.stats import spearmanr

        texts = REPORTS_A + REPORTS_B
        references = REFERENCES + REFERENCES
        mean_grades = [(x + y) / 2 for x, y in zip(first, second, strict=True)]
        rouge = [rouge_l(t, r) for t, r in zip(texts, references, strict=True)]
        bleu = [bleu4(t, r) for t, r in zip(texts, references, strict=True)]
        self.assertAlmostEqual(
            agreement.metrics["spearman_rouge_l"], spearmanr(mean_grades, rouge).statistic
        )
        self.assertAlmostEqual(
            agreement.metrics["spearman_bleu4"], spearmanr(mean_grades, bleu).statistic
        )
        # Preferences: A preferred on every item by both (ties go to A here but the third item's
        # 3-4 by reviewer2 prefers B); the metric agrees where it scores the preferred higher.
        expected = []
        for who in overall:
            for n in range(3):
                prefer_a = overall[who]["a"][n] >= overall[who]["b"][n]
                if rouge[n] != rouge[n + 3]:
                    expected.append((rouge[n] > rouge[n + 3]) == prefer_a)
        self.assertEqual(agreement.metrics["preferences"], 6)
        self.assertAlmostEqual(agreement.metrics["agrees_rouge_l"], sum(expected) / len(expected))


class ReportGradingPageTests(ReportGradingTestCase):
    SECRETS = ("secret-alpha", "secret-beta", "model-secret", "endpoint-of-")

    def page(self, session, who="reviewer"):
        self.client.force_login(self.people[who])
        return self.client.get(reverse("grade", args=[session.pk]))

    def assert_blind(self, response) -> None:
        body = response.content.decode()
        for secret in self.SECRETS:
            self.assertNotIn(secret, body)

    def test_a_grader_sees_two_reports_the_reference_and_no_model_name(self):
        response = self.page(self.pair)
        self.assertEqual(response.status_code, 200)
        self.assert_blind(response)
        self.assertContains(response, REPORTS_A[0])
        self.assertContains(response, REPORTS_B[0])
        self.assertContains(response, "Reference report")
        self.assertContains(response, 'name="left_hallucinations"')
        self.assertContains(response, 'name="right_overall" value="5"')

    def test_beside_the_reference_nothing_tells_which_side_it_is(self):
        response = self.page(self.against_reference)
        self.assert_blind(response)
        self.assertContains(response, REFERENCES[0])
        self.assertContains(response, REPORTS_B[0])
        self.assertNotContains(response, "Reference report")

    def test_posting_a_report_grade_saves_it_and_shows_the_next_report(self):
        self.client.force_login(self.people["reviewer"])
        url = reverse("grade", args=[self.pair.pk])
        response = self.client.post(
            url,
            {
                "item": self.reports[0].pk,
                "preference": "tie",
                "left_overall": "3",
                "right_overall": "3",
                "left_omissions": "2",
            },
        )
        self.assertRedirects(response, url)
        grade = Grade.objects.get()
        self.assertEqual(grade.rubric["left"], {"omissions": 2, "overall": 3})
        self.assertContains(self.client.get(url), REPORTS_A[1])

    def test_curators_create_a_session_against_the_reference(self):
        self.client.force_login(self.people["curator"])
        before = GradingSession.objects.count()
        response = self.client.post(
            reverse("grading-create"),
            {
                "task": "report_generation",
                "run_a": self.run_a.pk,
                "run_b": "",
                "graders": [self.people["reviewer"].pk],
            },
        )
        self.assertRedirects(response, reverse("grading"))
        created = GradingSession.objects.order_by("pk").last()
        self.assertEqual(GradingSession.objects.count(), before + 1)
        self.assertIsNone(created.run_b)
        response = self.client.post(
            reverse("grading-create"),
            {"run_a": self.run_a.pk, "run_b": "", "graders": [self.people["reviewer"].pk]},
        )
        self.assertEqual(response.status_code, 400)
        self.assertContains(
            response, "Only reports can be graded against the reference", status_code=400
        )

    def test_graders_list_the_sessions_without_run_names(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(reverse("grading"))
        self.assertContains(response, "Generated reports")
        for secret in self.SECRETS:
            self.assertNotContains(response, secret)

    def test_the_ratings_page_shows_the_report_agreement_to_curators_only(self):
        self.grade("reviewer", self.reports[0], "left", left_overall=4, right_overall=2)
        self.client.force_login(self.people["curator"])
        url = reverse("grading-ratings") + "?task=report_generation"
        response = self.client.get(url)
        self.assertContains(response, 'data-testid="report-agreement"')
        self.assertContains(response, "Correct findings")
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.get(url).status_code, 403)
