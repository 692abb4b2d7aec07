"""Independent adjudication: an item's reviewers never adjudicate it, whatever roles they hold
(service, API, queue, list, page); a refused adjudication keeps its draft in the work area."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.access import ADJUDICATOR, REVIEWER
from annotations.models import Adjudication, Item, ItemStatus
from annotations.selectors.review import adjudication_queue
from annotations.services.errors import NotAllowedError
from annotations.services.review import item_adjudicate, item_edit, review_submit
from tests.factories import make_personas, make_user
from tests.review.helpers import ACCEPT, assigned_benchmark
from tests.support.page_forms import PageForm

HTMX = {"HTTP_HX_REQUEST": "true"}
OTHER_COMMENT = "the answer key is wrong, see frame 3"

FORM = "//form[@data-adjudicate-form]"
NEW_VERSION = "//button[@data-choice='new'][not(@data-reject)]"


class IndependentAdjudicationTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        # The demo's old setting: an adjudicator who also reviews.
        cls.people["reviewer"] = make_user("alice", REVIEWER, ADJUDICATOR)
        cls.benchmark, cls.items = assigned_benchmark(cls.people, items=3)
        for item in cls.items:
            review_submit(item=item, reviewer=cls.people["reviewer"], version=1, **ACCEPT)
            review_submit(
                item=item, reviewer=cls.people["reviewer2"], version=1, verdict="reject",
                reason="wrong_answer", comment=OTHER_COMMENT,
            )  # fmt: skip
        cls.foreign = Item.objects.create(
            benchmark=cls.benchmark, source_index=99, question="Q?", options=["a", "b"],
            answer="A", status=ItemStatus.DISPUTED,
        )  # fmt: skip

    def test_the_service_refuses_a_reviewer_of_the_item(self):
        item = self.items[0]
        with pytest.raises(NotAllowedError, match="another adjudicator must settle it"):
            item_adjudicate(item=item, adjudicator=self.people["reviewer"], choice="a", version=1)
        self.assertFalse(Adjudication.objects.exists())
        item_adjudicate(item=item, adjudicator=self.people["adjudicator"], choice="a", version=1)
        self.assertEqual(Item.objects.get(pk=item.pk).status, ItemStatus.ADJUDICATED)

    def test_the_api_answers_403(self):
        api = APIClient()
        api.force_authenticate(self.people["reviewer"])
        url = reverse("api-item-adjudication", args=[self.items[0].pk])
        response = api.post(url, {"choice": "a", "version": 1}, format="json")
        self.assertEqual(response.status_code, 403)
        self.assertEqual(response.json()["code"], "own_review")
        self.assertFalse(Adjudication.objects.exists())

    def test_the_queue_holds_only_disputes_of_others(self):
        self.assertEqual(list(adjudication_queue(self.people["reviewer"])), [self.foreign])
        self.assertEqual(len(adjudication_queue(self.people["adjudicator"])), 4)

    def test_the_list_says_who_may_settle_each_dispute(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(reverse("adjudication"))
        self.assertContains(
            response, "Reviewed by you — another adjudicator must settle it", count=3
        )
        self.assertContains(response, "data-mine-to-settle", count=1)
        self.assertContains(response, f'href="{reverse("adjudicate", args=[self.foreign.pk])}"')
        self.assertNotContains(response, f'href="{reverse("adjudicate", args=[self.items[0].pk])}"')

    def test_the_page_refuses_inside_the_layout_and_shows_no_review(self):
        self.client.force_login(self.people["reviewer"])
        url = reverse("adjudicate", args=[self.items[0].pk])
        for response in (
            self.client.get(url),
            self.client.post(url, {"choice": "a", "version": 1}, **HTMX),
        ):
            self.assertContains(response, "another adjudicator must settle it", status_code=403)
            self.assertContains(response, "data-own-review-refusal", status_code=403)
            self.assertNotContains(response, OTHER_COMMENT, status_code=403)
        self.assertFalse(Adjudication.objects.exists())

    def test_after_settling_a_dispute_the_next_one_is_never_my_own(self):
        self.client.force_login(self.people["reviewer"])
        form = PageForm(self.client.get(reverse("adjudicate", args=[self.foreign.pk])), FORM)
        form.set("question", "Q?").set("answer_pick", "0").press(NEW_VERSION)
        response = form.submit(self.client, **HTMX)
        self.assertContains(response, "No disputed item left")

    def test_a_stale_adjudication_keeps_the_typed_version_and_shows_what_changed(self):
        item = self.items[1]
        self.client.force_login(self.people["adjudicator"])
        form = PageForm(self.client.get(reverse("adjudicate", args=[item.pk])), FORM)  # v1
        # Meanwhile another adjudicator settled it and a curator corrected it: version 3.
        item_adjudicate(item=item, adjudicator=make_user("zoe", ADJUDICATOR), choice="a", version=1)
        item_edit(item=Item.objects.get(pk=item.pk), user=self.people["curator"], version=2,
                  content={"question": "Corrected question?", "options": ["x", "y"], "answer": "B"})  # fmt: skip
        form.set("question", "My adjudicated question?").set("answer_pick", "1")
        form.set("comment", "typed note").press(NEW_VERSION)
        response = form.submit(self.client, **HTMX)
        self.assertEqual(response.status_code, 409)
        html = response.content.decode()
        self.assertIn("data-adjudicate-work", html)
        self.assertIn("data-version-change", html)
        self.assertIn("Corrected question?", html)
        self.assertIn("My adjudicated question?", html)
        self.assertIn("typed note", html)
        self.assertIn('data-mode="edit"', html)
