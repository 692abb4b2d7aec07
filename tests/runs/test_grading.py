"""Blinded side-by-side grading: sessions, sides, grades, ratings, and what graders may see."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse
from django.utils import timezone

from annotations.models import Assignment, Grade, GradingSession
from annotations.selectors import grading as grading_selectors
from annotations.services import grading as grading_services
from annotations.services.errors import DomainError
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_done_run, make_run_benchmark


@fast_passwords
class GradingTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(4, name="endo-grading")
        gold = {i.source_index: i.answer for i in cls.items}
        cls.run_a = make_done_run(
            cls.benchmark, cls.items, label="secret-model-alpha", answers=gold
        )
        cls.run_b = make_done_run(cls.benchmark, cls.items, label="secret-model-beta", answers={})
        cls.session = grading_services.grading_session_create(
            run_a=cls.run_a, run_b=cls.run_b, created_by=cls.people["curator"]
        )
        # The reviewer had an item of the benchmark to review: its sessions are in their scope.
        Assignment.objects.create(
            item=cls.items[0], reviewer=cls.people["reviewer"], slot=1, completed_at=timezone.now()
        )

    def grade(self, who: str, item, preference: str = "left", **kwargs) -> Grade:
        return grading_services.grade_submit(
            session=self.session,
            item=item,
            grader=self.people[who],
            preference=preference,
            **kwargs,
        )


class GradingServiceTests(GradingTestCase):
    def test_sides_are_stable_per_grader_and_vary_between_items(self):
        reviewer = self.people["reviewer"]
        sides = [
            grading_services.grade_run_a_on_left(session=self.session, item=item, grader=reviewer)
            for item in self.items
        ]
        again = [
            grading_services.grade_run_a_on_left(session=self.session, item=item, grader=reviewer)
            for item in self.items
        ]
        self.assertEqual(sides, again)
        many = {
            grading_services.grade_run_a_on_left(session=self.session, item=item, grader=person)
            for item in self.items
            for person in self.people.values()
        }
        self.assertEqual(many, {True, False})

    def test_a_grade_records_which_run_was_on_which_side(self):
        item = self.items[0]
        grade = self.grade("reviewer", item, "right", rubric={"left": {"accuracy": "2"}})
        a_on_left = grading_services.grade_run_a_on_left(
            session=self.session, item=item, grader=self.people["reviewer"]
        )
        left_run = self.run_a if a_on_left else self.run_b
        self.assertEqual(grade.left_prediction.run_id, left_run.pk)
        self.assertEqual(grade.rubric, {"left": {"accuracy": 2}})

    def test_a_grader_grades_an_item_once(self):
        self.grade("reviewer", self.items[0])
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.items[0])
        self.assertEqual(Grade.objects.count(), 1)

    def test_it_refuses_bad_preferences_and_rubric_scores(self):
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.items[0], "maybe")
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.items[0], rubric={"left": {"accuracy": 3}})
        with self.assertRaises(DomainError):
            self.grade("reviewer", self.items[0], rubric={"left": {"beauty": 1}})
        self.assertEqual(Grade.objects.count(), 0)

    def test_a_session_needs_two_different_runs_of_one_benchmark(self):
        with self.assertRaises(DomainError):
            grading_services.grading_session_create(
                run_a=self.run_a, run_b=self.run_a, created_by=None
            )
        other, items = make_run_benchmark(2)
        elsewhere = make_done_run(other, items, label="x", answers={})
        with self.assertRaises(DomainError):
            grading_services.grading_session_create(
                run_a=self.run_a, run_b=elsewhere, created_by=None
            )

    def test_ratings_favour_the_preferred_run_and_agreement_is_measured(self):
        for who in ("reviewer", "reviewer2"):
            for item in self.items:
                a_left = grading_services.grade_run_a_on_left(
                    session=self.session, item=item, grader=self.people[who]
                )
                self.grade(who, item, "left" if a_left else "right")  # always prefers run A
        result = grading_selectors.grading_ratings()
        self.assertEqual(result.comparisons, 8)
        self.assertEqual(result.ratings[0]["model"], f"#{self.run_a.pk} secret-model-alpha")
        top = result.ratings[0]
        self.assertLess(top["low"], top["rating"] + 1e-9)
        self.assertEqual(result.win_rates[0]["cells"][1], 1.0)
        self.assertEqual(result.agreement["pairs"], 4)
        self.assertEqual(result.agreement["percent"], 1.0)


class GradingPageTests(GradingTestCase):
    def url(self) -> str:
        return reverse("grade", args=[self.session.pk])

    def test_a_reviewer_sees_the_item_and_two_answers_without_model_names(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(self.url())
        self.assertContains(response, self.items[0].question)
        self.assertContains(response, "answer-card", count=2)
        for secret in ("secret-model", f"#{self.run_a.pk} ", "baseline-first"):
            self.assertNotContains(response, secret)

    def test_the_sessions_list_hides_the_runs_from_graders_and_shows_them_to_curators(self):
        self.client.force_login(self.people["reviewer"])
        with self.assertNumQueries(4):  # session, user, roles, sessions with counts
            response = self.client.get(reverse("grading"))
        self.assertNotContains(response, "secret-model")
        self.assertContains(response, "0 / 4")
        self.client.force_login(self.people["curator"])
        self.assertContains(self.client.get(reverse("grading")), "secret-model-alpha")

    def test_posting_a_grade_stores_it_and_moves_to_the_next_item(self):
        self.client.force_login(self.people["reviewer"])
        data = {
            "item": self.items[0].pk,
            "preference": "tie",
            "left_accuracy": "2",
            "right_accuracy": "0",
        }
        response = self.client.post(self.url(), data)
        self.assertRedirects(response, self.url())
        grade = Grade.objects.get()
        self.assertEqual(grade.preference, "tie")
        self.assertEqual(grade.rubric, {"left": {"accuracy": 2}, "right": {"accuracy": 0}})
        self.assertEqual(self.client.get(self.url()).context["item"], self.items[1])

    def test_a_reload_shows_the_same_sides(self):
        self.client.force_login(self.people["reviewer"])
        first = [a["text"] for a in self.client.get(self.url()).context["answers"]]
        second = [a["text"] for a in self.client.get(self.url()).context["answers"]]
        self.assertEqual(first, second)

    def test_when_everything_is_graded_it_says_so(self):
        for item in self.items:
            self.grade("reviewer", item)
        self.client.force_login(self.people["reviewer"])
        self.assertContains(self.client.get(self.url()), "Nothing left to grade")

    def test_it_refuses_other_methods(self):
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.put(self.url()).status_code, 405)

    def test_anonymous_users_are_sent_to_login(self):
        self.assertEqual(self.client.get(self.url()).status_code, 302)

    def test_curators_and_outsiders_do_not_grade(self):
        for who in ("curator", "outsider"):
            self.client.force_login(self.people[who])
            self.assertEqual(
                self.client.post(
                    self.url(), {"item": self.items[0].pk, "preference": "tie"}
                ).status_code,
                403,
            )
        self.assertEqual(Grade.objects.count(), 0)


class SessionCreateViewTests(GradingTestCase):
    url = reverse("grading-create")

    def test_a_curator_creates_a_session(self):
        self.client.force_login(self.people["curator"])
        grader = self.people["reviewer"].pk
        response = self.client.post(
            self.url, {"run_a": self.run_b.pk, "run_b": self.run_a.pk, "graders": [grader]}
        )
        self.assertRedirects(response, reverse("grading"))
        self.assertEqual(GradingSession.objects.count(), 2)
        self.assertEqual(
            list(GradingSession.objects.latest("pk").graders.values_list("pk", flat=True)),
            [grader],
        )

    def test_a_session_names_its_graders(self):
        self.client.force_login(self.people["curator"])
        response = self.client.post(self.url, {"run_a": self.run_b.pk, "run_b": self.run_a.pk})
        self.assertContains(response, "Pick at least one grader.", status_code=400)
        self.assertEqual(GradingSession.objects.count(), 1)

    def test_the_same_run_twice_is_refused(self):
        self.client.force_login(self.people["curator"])
        response = self.client.post(
            self.url,
            {
                "run_a": self.run_a.pk,
                "run_b": self.run_a.pk,
                "graders": [self.people["reviewer"].pk],
            },
        )
        self.assertContains(response, "two different runs", status_code=400)

    def test_it_refuses_a_get_anonymous_users_and_reviewers(self):
        self.assertEqual(self.client.post(self.url).status_code, 302)
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.post(self.url).status_code, 403)
        self.client.force_login(self.people["curator"])
        self.assertEqual(self.client.get(self.url).status_code, 405)
        self.assertEqual(GradingSession.objects.count(), 1)


class RatingsPageTests(GradingTestCase):
    url = reverse("grading-ratings")

    def test_curators_see_ratings_win_rates_and_agreement(self):
        for who in ("reviewer", "adjudicator"):
            for item in self.items[:2]:
                self.grade(who, item, "tie")
        self.client.force_login(self.people["curator"])
        response = self.client.get(self.url + "?benchmark=endo-grading")
        self.assertContains(response, "secret-model-alpha")
        self.assertContains(response, "<circle", count=2)
        self.assertContains(response, "Agreement between clinicians")
        self.assertEqual(response.context["result"].agreement["pairs"], 2)

    def test_it_refuses_a_post_anonymous_users_and_graders(self):
        self.assertEqual(self.client.get(self.url).status_code, 302)
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.get(self.url).status_code, 403)
        self.client.force_login(self.people["curator"])
        self.assertEqual(self.client.post(self.url).status_code, 405)
