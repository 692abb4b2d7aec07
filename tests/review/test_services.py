from __future__ import annotations

from collections import Counter

from django.test import TestCase

from annotations.models import (
    Adjudication,
    Assignment,
    Item,
    ItemRevision,
    ItemStatus,
    Review,
)
from annotations.services.errors import ConflictError, DomainError
from annotations.services.review import (
    assignments_create,
    item_adjudicate,
    item_edit,
    review_submit,
)
from tests.factories import make_benchmark, make_item, make_personas, make_user
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review, edit


class AssignmentTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.extra = make_user("frank", "reviewer")

    def test_each_item_goes_to_two_different_reviewers_balanced(self):
        benchmark = make_benchmark()
        for i in range(9):
            make_item(benchmark, index=i)
        reviewers = [self.people["reviewer"], self.people["reviewer2"], self.extra]
        created = assignments_create(benchmark=benchmark, reviewers=reviewers, per_item=2)
        self.assertEqual(created, 18)
        per_item = Counter(Assignment.objects.values_list("item_id", flat=True))
        self.assertEqual(set(per_item.values()), {2})
        pairs = Assignment.objects.values_list("item_id", "reviewer_id")
        self.assertEqual(len(set(pairs)), 18)  # never twice to one person
        load = Counter(Assignment.objects.values_list("reviewer_id", flat=True))
        self.assertEqual(sorted(load.values()), [6, 6, 6])
        self.assertEqual(set(Item.objects.values_list("status", flat=True)), {ItemStatus.IN_REVIEW})

    def test_assigning_again_only_fills_missing_slots(self):
        benchmark = make_benchmark()
        make_item(benchmark, index=1)
        assignments_create(benchmark=benchmark, reviewers=[self.people["reviewer"]], per_item=1)
        created = assignments_create(
            benchmark=benchmark,
            reviewers=[self.people["reviewer"], self.people["reviewer2"]],
            per_item=2,
        )
        self.assertEqual(created, 1)
        self.assertEqual(
            set(Assignment.objects.values_list("reviewer__username", "slot")),
            {("alice", 1), ("bob", 2)},
        )

    def test_a_filter_assigns_only_matching_items(self):
        benchmark = make_benchmark()
        make_item(benchmark, index=1, category="Lesion")
        make_item(benchmark, index=2, category="Anatomy")
        reviewers = [self.people["reviewer"], self.people["reviewer2"]]
        assignments_create(
            benchmark=benchmark, reviewers=reviewers, filters={"category": "Anatomy"}
        )
        self.assertEqual(
            set(Assignment.objects.values_list("item__category", flat=True)), {"Anatomy"}
        )

    def test_it_refuses_too_few_reviewers_and_non_reviewers(self):
        benchmark = make_benchmark()
        make_item(benchmark, index=1)
        with self.assertRaises(DomainError):
            assignments_create(benchmark=benchmark, reviewers=[self.people["reviewer"]], per_item=2)
        with self.assertRaises(DomainError):
            assignments_create(
                benchmark=benchmark,
                reviewers=[self.people["reviewer"], self.people["outsider"]],
            )
        self.assertFalse(Assignment.objects.exists())


class AgreementRuleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.benchmark, (self.item, self.other) = assigned_benchmark(self.people)

    def test_both_accept_is_agreed_without_a_new_version(self):
        item = both_review(self.item, self.people, ACCEPT, ACCEPT)
        self.assertEqual((item.status, item.version), (ItemStatus.AGREED, 1))

    def test_one_review_keeps_the_item_in_review(self):
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **ACCEPT)
        self.item.refresh_from_db()
        self.assertEqual(self.item.status, ItemStatus.IN_REVIEW)

    def test_identical_edits_are_agreed_and_become_a_revision(self):
        item = both_review(
            self.item, self.people, edit(), edit(question="  Which lesion is visible? ")
        )
        self.assertEqual((item.status, item.version), (ItemStatus.AGREED, 2))
        self.assertEqual((item.question, item.answer), ("Which lesion is visible?", "B"))
        revision = ItemRevision.objects.get(item=item, version=2)
        self.assertEqual((revision.reason, revision.replaced_version), ("agreed_edit", 1))

    def test_different_edits_are_disputed(self):
        item = both_review(self.item, self.people, edit(answer="B"), edit(answer="C"))
        self.assertEqual((item.status, item.version), (ItemStatus.DISPUTED, 1))

    def test_accept_against_edit_is_disputed(self):
        item = both_review(self.item, self.people, ACCEPT, edit())
        self.assertEqual(item.status, ItemStatus.DISPUTED)

    def test_both_reject_is_an_agreed_rejection(self):
        item = both_review(self.item, self.people, REJECT, {**REJECT, "reason": "duplicate"})
        self.assertEqual(item.status, ItemStatus.REJECTED)

    def test_an_edit_that_changes_nothing_counts_as_accept(self):
        unchanged = edit(question=self.item.question, answer="A")
        item = both_review(self.item, self.people, unchanged, ACCEPT)
        self.assertEqual(item.status, ItemStatus.AGREED)
        self.assertEqual(Review.objects.filter(verdict="accept").count(), 2)

    def test_a_stale_version_is_a_conflict_and_writes_nothing(self):
        with self.assertRaises(ConflictError) as caught:
            review_submit(item=self.item, reviewer=self.people["reviewer"], version=7, **ACCEPT)
        self.assertEqual(caught.exception.current_version, 1)
        self.assertFalse(Review.objects.exists())
        self.assertFalse(Assignment.objects.filter(completed_at__isnull=False).exists())

    def test_a_second_submission_is_refused(self):
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **ACCEPT)
        with self.assertRaises(DomainError):
            review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **REJECT)
        self.assertEqual(Review.objects.count(), 1)

    def test_an_unassigned_user_cannot_review(self):
        with self.assertRaises(DomainError):
            review_submit(item=self.item, reviewer=self.people["adjudicator"], version=1, **ACCEPT)

    def test_invalid_edits_and_reasonless_rejections_are_refused(self):
        bad = [
            edit(options=["Only one"], answer="A"),
            edit(answer="F"),
            edit(answer=""),  # no answer at all
            edit(answer="AB"),
            edit(question="  "),
            edit(options=["Same", "Same"], answer="A"),
            {"verdict": "reject"},
            {"verdict": "maybe"},
        ]
        for fields in bad:
            with self.subTest(fields=fields), self.assertRaises(DomainError):
                review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **fields)
        self.assertFalse(Review.objects.exists())

    def test_an_edit_may_add_remove_and_reorder_options(self):
        proposal = edit(options=["Ulcer", "Polyp", "Erosion"], answer="C")
        item = both_review(self.item, self.people, proposal, proposal)
        self.assertEqual(item.options, ["Ulcer", "Polyp", "Erosion"])
        self.assertEqual(item.answer_text, "Erosion")


class AdjudicationTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        _benchmark, (item, _other) = assigned_benchmark(self.people)
        self.item = both_review(item, self.people, edit(answer="B"), REJECT)

    def adjudicate(self, **fields):
        fields.setdefault("version", self.item.version)
        return item_adjudicate(item=self.item, adjudicator=self.people["adjudicator"], **fields)

    def test_taking_a_applies_its_edit_as_a_new_revision(self):
        adjudication = self.adjudicate(choice="a")
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual((item.status, item.version, item.answer), ("adjudicated", 2, "B"))
        self.assertEqual(ItemRevision.objects.get(item=item, version=2).reason, "adjudicated")
        self.assertEqual(adjudication.review_a.reviewer, self.people["reviewer"])

    def test_taking_b_takes_its_rejection(self):
        self.adjudicate(choice="b")
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual((item.status, item.version), ("rejected", 1))
        self.assertTrue(Adjudication.objects.get().rejected)

    def test_a_new_version_is_validated_and_applied(self):
        content = {"question": "What is seen?", "options": ["A thing", "Another"], "answer": "B"}
        self.adjudicate(choice="new", content=content, comment="Both were half right")
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual(
            (item.question, item.options, item.answer),
            ("What is seen?", ["A thing", "Another"], "B"),
        )
        with self.assertRaises(DomainError):
            self.adjudicate(choice="new", content={"question": "x"}, version=2)

    def test_a_stale_adjudication_is_a_conflict(self):
        with self.assertRaises(ConflictError):
            self.adjudicate(choice="a", version=5)
        self.assertFalse(Adjudication.objects.exists())

    def test_only_disputed_items_are_adjudicated(self):
        self.adjudicate(choice="a")
        with self.assertRaises(DomainError):
            self.adjudicate(choice="b", version=2)

    def test_a_curator_edit_needs_the_current_version(self):
        self.adjudicate(choice="a")
        content = {"question": "Fixed?", "options": ["Yes", "No"], "answer": "A"}
        with self.assertRaises(ConflictError):
            item_edit(item=self.item, user=self.people["curator"], version=1, content=content)
        self.assertEqual(
            item_edit(item=self.item, user=self.people["curator"], version=2, content=content), 3
        )
