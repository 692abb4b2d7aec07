"""A grading session names its graders; against the reference, no grader grades text of theirs."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from annotations.models import Adjudication, Grade
from annotations.selectors import grading as grading_selectors
from annotations.services import grading as grading_services
from annotations.services.errors import DomainError
from tests.factories import make_benchmark, make_item, make_personas
from tests.runs.helpers import make_report_run


class GradersTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        benchmark = make_benchmark("gx-graders", family="gastricx")
        cls.reports = [
            make_item(
                benchmark,
                index=n + 1,
                kind="open",
                question="Write the CT report.",
                options=[],
                answer="",
                reference=f"Reference report {n}.",
                target={"report": "ct"},
            )
            for n in range(2)
        ]
        run = make_report_run(benchmark, cls.reports, label="alpha", texts=["One.", "Two."])
        cls.session = grading_services.grading_session_create(
            run_a=run,
            run_b=None,
            task="report_generation",
            created_by=cls.people["curator"],
            graders=[cls.people["reviewer"], cls.people["adjudicator"]],
        )
        from annotations.models import Assignment

        for item in cls.reports:  # the reviewers' scope: the benchmark they review
            for slot, who in enumerate(("reviewer", "reviewer2"), start=1):
                Assignment.objects.create(item=item, reviewer=cls.people[who], slot=slot)

    def test_a_clinician_not_named_neither_lists_nor_grades_the_session(self):
        self.client.force_login(self.people["reviewer2"])
        self.assertEqual(self.client.get(reverse("grading")).context["sessions"], [])
        self.assertEqual(self.client.get(reverse("grade", args=[self.session.pk])).status_code, 404)
        self.client.force_login(self.people["reviewer"])
        listed = self.client.get(reverse("grading")).context["sessions"]
        self.assertEqual([p.session for p in listed], [self.session])
        self.assertEqual(self.client.get(reverse("grade", args=[self.session.pk])).status_code, 200)

    def test_the_reference_is_never_the_graders_own_text(self):
        carol = self.people["adjudicator"]
        written = self.reports[0]
        Adjudication.objects.create(item=written, adjudicator=carol, choice="new", item_version=1)
        progress = grading_selectors.grading_progress(session=self.session, grader=carol)
        self.assertEqual(progress.total, 1)
        shown = grading_selectors.grading_next_item(session=self.session, grader=carol)
        self.assertEqual(shown, self.reports[1])
        with self.assertRaisesMessage(DomainError, "You wrote this item's reference"):
            grading_services.grade_submit(
                session=self.session, item=written, grader=carol, preference="tie"
            )
        self.assertFalse(Grade.objects.exists())
        # Another grader grades it.
        alice = self.people["reviewer"]
        self.assertEqual(
            grading_selectors.grading_progress(session=self.session, grader=alice).total, 2
        )
