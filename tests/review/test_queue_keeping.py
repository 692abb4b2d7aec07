"""The stored queue order and progress counts, kept by the services that write them."""

from __future__ import annotations

from django.test import TestCase

from annotations.models import Assignment, Item, Run, Suspicion, TriageSetting
from annotations.scoring.triage import ALL_CODES, Reason, Suspect
from annotations.selectors.pairs import pair_progress, pair_queue_next
from annotations.selectors.review import (
    next_baseline_item,
    queue_next,
    queue_progress,
)
from annotations.services.human_baseline import human_answer_submit, human_baseline_open
from annotations.services.review import assignments_create, review_submit
from annotations.services.review_changes import review_withdraw
from annotations.services.stats import tables_analyze
from annotations.services.triage import TriageResult, triage_setting_update, triage_store
from tests.factories import make_benchmark, make_item, make_personas
from tests.review.helpers import ACCEPT


def suspects(scores: dict[int, float]) -> TriageResult:
    reason = Reason(code=ALL_CODES[0], weight=1.0, detail="")
    made = [Suspect(key=pk, score=score, reasons=[reason]) for pk, score in scores.items()]
    return TriageResult(suspects=made, index_of={})


class QueueKeepingTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("kept")
        cls.items = [make_item(cls.benchmark, index=i) for i in range(4)]
        cls.twin = make_item(
            cls.benchmark, index=10, clean_twin=cls.items[0], degradation_type="blur"
        )

    def assign(self, **kwargs) -> int:
        return assignments_create(
            benchmark=self.benchmark,
            reviewers=[self.people["reviewer"], self.people["reviewer2"]],
            per_item=2,
            **kwargs,
        )

    def order(self, reviewer) -> list[int]:
        seen, row = [], queue_next(reviewer)
        while row is not None and row.item_id not in seen:
            seen.append(row.item_id)
            row = queue_next(reviewer, after=row.pk)
        return seen

    def test_assignments_count_items_and_pairs_apart(self):
        self.assertEqual(self.assign(), 10)
        reviewer = self.people["reviewer"]
        self.assertEqual((queue_progress(reviewer).done, queue_progress(reviewer).total), (0, 4))
        self.assertEqual((pair_progress(reviewer).done, pair_progress(reviewer).total), (0, 1))
        flags = set(Assignment.objects.filter(item=self.twin).values_list("pair", flat=True))
        self.assertEqual(flags, {True})
        self.assertEqual(pair_queue_next(reviewer).item_id, self.twin.pk)
        self.assertNotIn(self.twin.pk, self.order(reviewer))

    def test_a_review_counts_once_and_a_withdrawal_takes_it_back(self):
        self.assign()
        reviewer, item = self.people["reviewer"], Item.objects.get(pk=self.items[1].pk)
        review_submit(item=item, reviewer=reviewer, version=item.version, **ACCEPT)
        self.assertEqual(queue_progress(reviewer).done, 1)
        self.assertEqual(queue_progress(self.people["reviewer2"]).done, 0)
        review_withdraw(item=item, reviewer=reviewer, version=item.version)
        self.assertEqual(queue_progress(reviewer).done, 0)
        self.assertEqual(queue_progress(reviewer).total, 4)

    def test_assigning_more_adds_to_the_counts(self):
        self.assign(filters={"status": "pending"})
        make_item(self.benchmark, index=20)
        self.assertEqual(self.assign(), 2)
        self.assertEqual(queue_progress(self.people["reviewer"]).total, 5)

    def test_new_assignments_take_their_rank_from_the_suspects_first_switch(self):
        triage_store(benchmark=self.benchmark, result=suspects({self.items[2].pk: 0.7}))
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        self.assign()
        a, b, c, d = (item.pk for item in self.items)
        self.assertEqual(self.order(self.people["reviewer"]), [c, a, b, d])

    def test_a_recomputation_reorders_open_assignments_while_the_switch_is_on(self):
        self.assign()
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        a, b, c, d = (item.pk for item in self.items)
        self.assertEqual(self.order(self.people["reviewer"]), [a, b, c, d])
        triage_store(benchmark=self.benchmark, result=suspects({d: 0.9, b: 0.4}))
        self.assertEqual(self.order(self.people["reviewer"]), [d, b, a, c])
        triage_setting_update(benchmark=self.benchmark, suspects_first=False)
        self.assertEqual(self.order(self.people["reviewer"]), [a, b, c, d])
        self.assertFalse(Assignment.objects.exclude(rank=0.0).exists())

    def test_scores_stored_while_the_switch_is_off_wait_for_it(self):
        self.assign()
        a, b, c, d = (item.pk for item in self.items)
        triage_store(benchmark=self.benchmark, result=suspects({c: 0.5}))
        self.assertEqual(self.order(self.people["reviewer"]), [a, b, c, d])
        TriageSetting.objects.filter(benchmark=self.benchmark).update(suspects_first=False)
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        self.assertEqual(self.order(self.people["reviewer"]), [c, a, b, d])
        self.assertEqual(Suspicion.objects.count(), 1)

    def test_the_next_item_after_another_is_one_query(self):
        self.assign()
        first = queue_next(self.people["reviewer"])
        with self.assertNumQueries(1):
            following = queue_next(self.people["reviewer"], after=first.pk)
        self.assertEqual(following.item_id, self.items[1].pk)
        with self.assertNumQueries(1):
            queue_progress(self.people["reviewer"])

    def test_analyze_is_harmless_where_there_is_nothing_to_analyze(self):
        tables_analyze(Assignment, Item)


class BaselineQueueTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("baseline-queue")
        cls.items = [make_item(cls.benchmark, index=i) for i in range(5)]

    def test_the_next_item_goes_on_after_the_last_answer_then_back_to_those_left(self):
        clinician = self.people["reviewer"]
        run = human_baseline_open(
            benchmark=self.benchmark, clinician=clinician, opened_by=self.people["curator"]
        )
        self.assertEqual(next_baseline_item(run), self.items[0])
        for item in (self.items[0], self.items[3]):
            human_answer_submit(run=run, item=item, user=clinician, letter="A")
        self.assertEqual(next_baseline_item(run), self.items[4])
        human_answer_submit(run=run, item=self.items[4], user=clinician, letter="B")
        self.assertEqual(next_baseline_item(run), self.items[1])
        human_answer_submit(run=run, item=self.items[1], user=clinician, letter="B")
        run = Run.objects.get(pk=run.pk)
        with self.assertNumQueries(2):  # the item after the last answer, its images
            self.assertEqual(next_baseline_item(run), self.items[2])
