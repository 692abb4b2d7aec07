"""`manage.py seed_load`: a synthetic benchmark for load tests, refused outside DEBUG."""

from __future__ import annotations

from io import StringIO

from django.core.management import CommandError, call_command
from django.test import TestCase, override_settings

from annotations.access import REVIEWER, has_role
from annotations.models import Assignment, Benchmark, Image, Item, ItemRevision, ItemStatus
from annotations.selectors.review import queue_next, queue_progress


class SeedLoadTests(TestCase):
    def seed(self, *args: str) -> str:
        out = StringIO()
        call_command("seed_load", *args, stdout=out, verbosity=0)
        return out.getvalue()

    @override_settings(DEBUG=True)
    def test_it_makes_items_with_shared_images_and_double_assignments(self):
        summary = self.seed("load", "--items", "30", "--reviewers", "3")
        self.assertIn("30 items", summary)
        benchmark = Benchmark.objects.get(name="load")
        items = Item.objects.filter(benchmark=benchmark)
        self.assertEqual(items.count(), 30)
        self.assertEqual(set(items.values_list("status", flat=True)), {ItemStatus.IN_REVIEW})
        self.assertEqual(ItemRevision.objects.filter(item__benchmark=benchmark).count(), 30)
        self.assertLessEqual(Image.objects.count(), 8)
        self.assertEqual(Assignment.objects.filter(item__benchmark=benchmark).count(), 60)
        reviewer = Assignment.objects.first().reviewer
        self.assertTrue(has_role(reviewer, REVIEWER))
        self.assertTrue(reviewer.check_password("load-test-password"))
        self.assertEqual(queue_progress(reviewer).total, 20)
        self.assertIsNotNone(queue_next(reviewer))

    @override_settings(DEBUG=True)
    def test_it_refuses_an_existing_name(self):
        self.seed("load", "--items", "2", "--reviewers", "2")
        with self.assertRaisesMessage(CommandError, "already exists"):
            self.seed("load", "--items", "2", "--reviewers", "2")
        self.assertEqual(Item.objects.count(), 2)

    @override_settings(DEBUG=True)
    def test_it_needs_two_reviewers_for_double_review(self):
        with self.assertRaises(CommandError):
            self.seed("load", "--items", "2", "--reviewers", "1")
        self.assertFalse(Benchmark.objects.exists())

    @override_settings(DEBUG=False)
    def test_it_refuses_to_run_without_debug(self):
        with self.assertRaisesMessage(CommandError, "DEBUG"):
            self.seed("load", "--items", "2", "--reviewers", "2")
        self.assertFalse(Benchmark.objects.exists())
