"""Agreement figures against values computed by hand (worked out in the comments)."""

from __future__ import annotations

import math

from django.test import TestCase
from django.urls import reverse

from annotations.services.agreement import MIN_UNITS, benchmark_agreement
from annotations.services.review import assignments_create
from tests.factories import make_benchmark, make_item, make_personas
from tests.review.helpers import ACCEPT, both_review, edit

REJECT = {"verdict": "reject", "reason": "ambiguous"}
# (alice, bob) verdicts on six items: the first three in "Lesion", the last three in "Anatomy".
PLAN = [
    ("Lesion", ACCEPT, ACCEPT),
    ("Lesion", ACCEPT, ACCEPT),
    ("Lesion", ACCEPT, edit()),
    ("Anatomy", edit(answer="B"), edit(answer="C")),
    ("Anatomy", REJECT, REJECT),
    ("Anatomy", REJECT, ACCEPT),
]


class AgreementTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("agree")
        items = [
            make_item(cls.benchmark, index=i, category=c) for i, (c, _a, _b) in enumerate(PLAN)
        ]
        assignments_create(
            benchmark=cls.benchmark, reviewers=[cls.people["reviewer"], cls.people["reviewer2"]]
        )
        for item, (_c, first, second) in zip(items, PLAN, strict=True):
            item.refresh_from_db()
            both_review(item, cls.people, first, second)

    def test_overall_percent_agreement_and_alpha(self):
        report = benchmark_agreement(benchmark=self.benchmark)
        self.assertEqual(report.overall.n, 6)
        # Same verdict on items 1, 2, 4 and 5.
        self.assertAlmostEqual(report.overall.percent, 4 / 6)
        # Coincidences: o[A,A]=4, o[E,E]=2, o[R,R]=2, o[A,E]=o[E,A]=1, o[A,R]=o[R,A]=1;
        # n_A=6, n_E=3, n_R=3, n=12; alpha = 1 - (n-1)·Σoff-diagonal / (n² - Σn_c²)
        # = 1 - 11·4 / (144 - 54) = 46/90.
        self.assertAlmostEqual(report.overall.alpha, 46 / 90)
        self.assertTrue(report.overall.warning)  # 6 < 20

    def test_cohen_kappa_of_the_reviewer_pair(self):
        (pair,) = benchmark_agreement(benchmark=self.benchmark).pairs
        self.assertEqual((pair.reviewer_a, pair.reviewer_b, pair.n), ("alice", "bob", 6))
        # alice: A A A E R R; bob: A A E E R A. p_o = 4/6 = 24/36;
        # p_e = (3·3 + 1·2 + 2·1)/36 = 13/36; kappa = (24 - 13)/(36 - 13) = 11/23.
        self.assertAlmostEqual(pair.kappa, 11 / 23)

    def test_per_taxonomy_value(self):
        by_category = benchmark_agreement(benchmark=self.benchmark).by_field["category"]
        lesion, anatomy = by_category["Lesion"], by_category["Anatomy"]
        self.assertEqual((lesion.n, anatomy.n), (3, 3))
        self.assertAlmostEqual(lesion.percent, 2 / 3)
        # Lesion: n_A=5, n_E=1, n=6; 1 - 5·2/(36 - 26) = 0.
        self.assertAlmostEqual(lesion.alpha, 0.0)
        # Anatomy: n_E=2, n_R=3, n_A=1, n=6; 1 - 5·2/(36 - 14) = 12/22.
        self.assertAlmostEqual(anatomy.alpha, 12 / 22)

    def test_the_page_shows_the_numbers_a_chart_and_the_warning(self):
        self.client.force_login(self.people["curator"])
        response = self.client.get(reverse("agreement", args=[self.benchmark.name]))
        self.assertContains(response, '<span class="stat-value" data-stat="n">6</span>', html=False)
        self.assertContains(response, "0.511")
        self.assertContains(response, "0.478")
        self.assertContains(response, "<svg", count=2)  # overall + category
        self.assertContains(response, f"under {MIN_UNITS}")

    def test_no_co_reviewed_item_gives_undefined_figures_not_errors(self):
        empty = make_benchmark("nothing-reviewed")
        report = benchmark_agreement(benchmark=empty)
        self.assertEqual(report.overall.n, 0)
        self.assertTrue(math.isnan(report.overall.percent))
        self.client.force_login(self.people["curator"])
        response = self.client.get(reverse("agreement", args=[empty.name]))
        self.assertContains(response, "No item has two reviews yet.")
