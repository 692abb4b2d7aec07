"""The "review the suspects first" ordering of the review queue."""

from __future__ import annotations

from django.test import TestCase

from annotations.models import Assignment, Item, ItemStatus, Suspicion
from annotations.selectors.review import queue_next
from annotations.selectors.triage import order_queue_by_suspicion
from annotations.services.triage import triage_setting_update
from tests.factories import make_benchmark, make_item, make_personas


class SuspectsFirstQueueTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("queued")
        cls.items = [make_item(cls.benchmark, index=i) for i in range(4)]
        Item.objects.filter(benchmark=cls.benchmark).update(status=ItemStatus.IN_REVIEW)
        cls.rows = [
            Assignment.objects.create(item=item, reviewer=cls.people["reviewer"], slot=1)
            for item in cls.items
        ]
        for item, score in zip(cls.items, (0.1, 0.9, 0.0, 0.5), strict=True):
            if score:
                Suspicion.objects.create(item=item, score=score, reasons=[])

    def queue(self) -> list[int]:
        rows = Assignment.objects.filter(reviewer=self.people["reviewer"])
        return [row.item_id for row in order_queue_by_suspicion(rows)]

    def test_without_the_switch_the_queue_keeps_its_order(self):
        self.assertEqual(self.queue(), [item.pk for item in self.items])

    def test_with_the_switch_the_most_suspect_come_first_and_unscored_last(self):
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        a, b, c, d = (item.pk for item in self.items)
        self.assertEqual(self.queue(), [b, d, a, c])

    def test_the_next_item_follows_the_suspect_order_and_wraps_round(self):
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        reviewer = self.people["reviewer"]
        first = queue_next(reviewer)
        self.assertEqual(first.item_id, self.items[1].pk)
        second = queue_next(reviewer, after=first.pk)
        self.assertEqual(second.item_id, self.items[3].pk)
        last = self.rows[2]
        self.assertEqual(queue_next(reviewer, after=last.pk).pk, first.pk)

    def test_the_order_is_one_query_whatever_the_queue_length(self):
        triage_setting_update(benchmark=self.benchmark, suspects_first=True)
        with self.assertNumQueries(1):
            self.queue()
