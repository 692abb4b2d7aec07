"""Dates and numbers follow the reader's language: Chinese dates on the Chinese interface, never
the American month/day order."""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings
from django.test import TestCase
from django.urls import reverse

from annotations.models import Item
from tests.factories import make_personas
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review

US_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/\d{4}\b|\b(?:a|p)\.m\.")
WHEN = dt.datetime(2026, 3, 4, 15, 6, tzinfo=dt.UTC)


class DateFormatsTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        _benchmark, items = assigned_benchmark(cls.people, items=1, name="dates")
        disputed = both_review(items[0], cls.people, ACCEPT, REJECT)
        Item.objects.filter(pk=disputed.pk).update(updated_at=WHEN)

    def adjudication_list(self, language: str) -> str:
        self.client.force_login(self.people["adjudicator"])
        self.client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        return self.client.get(reverse("adjudication")).content.decode()

    def test_the_chinese_interface_writes_dates_the_chinese_way(self):
        html = self.adjudication_list("zh-hans")
        self.assertIn("2026年3月4日 15:06", html)
        self.assertIsNone(US_DATE.search(html))

    def test_the_english_interface_keeps_its_own_format(self):
        html = self.adjudication_list("en")
        self.assertIsNotNone(US_DATE.search(html))  # the pattern finds what it looks for
        self.assertNotIn("年", html)
