from __future__ import annotations

from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TestCase

from annotations.models import Assignment, Prediction, Run
from annotations.services.errors import DomainError
from annotations.services.human_baseline import human_answer_submit, human_baseline_open
from tests.factories import make_benchmark, make_item, make_personas, make_user


class AssignReviewsCommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        make_user("frank", "reviewer")

    def test_it_assigns_by_usernames_and_reports_the_count(self):
        benchmark = make_benchmark("cmd")
        for index in range(3):
            make_item(benchmark, index=index)
        out = StringIO()
        call_command("assign_reviews", "cmd", "--reviewers", "alice,bob,frank", stdout=out)
        self.assertEqual(out.getvalue().strip(), "6 assignments created in cmd")
        self.assertEqual(Assignment.objects.count(), 6)

    def test_it_fails_clearly_on_unknown_names(self):
        make_benchmark("cmd2")
        with self.assertRaisesMessage(CommandError, "no benchmark"):
            call_command("assign_reviews", "nope", "--reviewers", "alice,bob")
        with self.assertRaisesMessage(CommandError, "Unknown users: zed"):
            call_command("assign_reviews", "cmd2", "--reviewers", "alice,zed")


class HumanBaselineTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("human")
        cls.items = [
            make_item(cls.benchmark, index=i, answer="A", split="test", category=c)
            for i, c in enumerate(["Lesion", "Lesion", "Anatomy"])
        ]

    def open(self, **kwargs):
        return human_baseline_open(
            benchmark=self.benchmark,
            clinician=self.people["reviewer"],
            opened_by=self.people["curator"],
            **kwargs,
        )

    def test_answers_become_predictions_and_the_run_closes_with_a_summary(self):
        run = self.open()
        self.assertEqual(
            (run.kind, run.human, run.total, run.status),
            ("human", self.people["reviewer"], 3, "running"),
        )
        for item, letter in zip(self.items, ["A", "B", "a"], strict=True):
            human_answer_submit(
                run=run, item=item, user=self.people["reviewer"], letter=letter, seconds_spent=3
            )
        run.refresh_from_db()
        self.assertEqual(run.status, "done")
        self.assertEqual(
            list(Prediction.objects.filter(run=run).values_list("extracted", "hit")),
            [("A", True), ("B", False), ("A", True)],
        )
        self.assertAlmostEqual(run.summary["overall"]["accuracy"], 2 / 3)
        self.assertEqual(run.summary["by"]["category"]["Lesion"]["hits"], 1)

    def test_a_limit_fixes_the_items_and_answers_are_once_and_own(self):
        run = self.open(limit=2)
        self.assertEqual(run.total, 2)
        with self.assertRaises(DomainError):
            human_answer_submit(
                run=run, item=self.items[2], user=self.people["reviewer"], letter="A"
            )
        with self.assertRaises(DomainError):
            human_answer_submit(
                run=run, item=self.items[0], user=self.people["reviewer2"], letter="A"
            )
        human_answer_submit(run=run, item=self.items[0], user=self.people["reviewer"], letter="A")
        with self.assertRaises(DomainError):
            human_answer_submit(
                run=run, item=self.items[0], user=self.people["reviewer"], letter="B"
            )
        self.assertEqual(Run.objects.get(pk=run.pk).completed, 1)

    def test_only_clinicians_answer(self):
        with self.assertRaises(DomainError):
            human_baseline_open(
                benchmark=self.benchmark,
                clinician=self.people["outsider"],
                opened_by=self.people["curator"],
            )

    def test_a_session_ended_early_keeps_its_answers_scored_as_partial(self):
        from annotations.services.runs import run_cancel

        run = self.open()
        human_answer_submit(run=run, item=self.items[0], user=self.people["reviewer"], letter="A")
        self.assertTrue(run_cancel(run=run))
        run.refresh_from_db()
        self.assertEqual((run.status, run.completed, run.total), ("cancelled", 1, 3))
        self.assertEqual(run.summary["overall"]["hits"], 1)
        self.assertIsNotNone(run.finished_at)
        with self.assertRaises(DomainError):
            human_answer_submit(
                run=run, item=self.items[1], user=self.people["reviewer"], letter="A"
            )
        self.assertFalse(run_cancel(run=run))  # already ended: nothing changes

    def test_a_whole_selection_goes_to_another_clinician_with_its_filters(self):
        from annotations.services.human_baseline import human_baseline_reassign

        run = self.open(filters={"category": "Lesion"})
        given = human_baseline_reassign(
            run=run, clinician=self.people["adjudicator"], opened_by=self.people["curator"]
        )
        run.refresh_from_db()
        self.assertEqual(run.status, "cancelled")
        self.assertEqual(
            (given.human, given.total, given.status), (self.people["adjudicator"], 2, "running")
        )
        self.assertEqual(given.filters["category"], "Lesion")
        # An ended session can be given again: the new one is for yet another clinician.
        again = human_baseline_reassign(
            run=run, clinician=self.people["reviewer2"], opened_by=self.people["curator"]
        )
        self.assertEqual(again.total, 2)
        with self.assertRaises(DomainError):
            human_baseline_reassign(
                run=given, clinician=self.people["adjudicator"], opened_by=self.people["curator"]
            )
