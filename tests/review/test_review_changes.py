"""Change my verdict: a reviewer changes or withdraws their review until the other review of the
item is in; every earlier verdict stays in the item's history. Service, API and pages."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, ItemStatus, Review, ReviewChange
from annotations.services.errors import DomainError, NotAllowedError
from annotations.services.review import review_submit
from annotations.services.review_changes import review_change, review_withdraw
from tests.factories import make_personas
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, edit
from tests.support.page_forms import PageForm

HTMX = {"HTTP_HX_REQUEST": "true"}


class ReviewChangeServiceTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.benchmark, (self.item, self.other) = assigned_benchmark(self.people)
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **REJECT)

    def test_a_mistaken_verdict_is_changed_and_the_earlier_one_kept(self):
        outcome = review_change(
            item=self.item, reviewer=self.people["reviewer"], version=1, comment="misclick",
            **ACCEPT,
        )  # fmt: skip
        review = Review.objects.get(item=self.item)
        self.assertEqual(
            (review.verdict, review.reason, review.comment), ("accept", "", "misclick")
        )
        self.assertEqual(outcome.status, ItemStatus.IN_REVIEW)
        change = ReviewChange.objects.get()
        self.assertEqual(
            (change.action, change.verdict, change.review), ("changed", "reject", review)
        )
        self.assertEqual(change.previous["reason"], "ambiguous")
        # The second review then settles against the changed verdict: both accept.
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        self.item.refresh_from_db()
        self.assertEqual(self.item.status, ItemStatus.AGREED)

    def test_a_withdrawn_verdict_reopens_the_assignment(self):
        review_withdraw(item=self.item, reviewer=self.people["reviewer"], version=1)
        self.assertFalse(Review.objects.filter(reviewer=self.people["reviewer"]).exists())
        assignment = Assignment.objects.get(item=self.item, reviewer=self.people["reviewer"])
        self.assertIsNone(assignment.completed_at)
        self.assertEqual(ReviewChange.objects.get().action, "withdrawn")
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **edit())
        self.assertEqual(Review.objects.get(reviewer=self.people["reviewer"]).verdict, "edit")

    def test_once_the_other_review_is_in_only_adjudication_changes_the_outcome(self):
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        for write in (review_change, review_withdraw):
            kwargs = {"verdict": "accept"} if write is review_change else {}
            with self.subTest(write=write.__name__), pytest.raises(NotAllowedError):
                write(item=self.item, reviewer=self.people["reviewer"], version=1, **kwargs)
        self.assertEqual(Review.objects.get(reviewer=self.people["reviewer"]).verdict, "reject")
        self.assertFalse(ReviewChange.objects.exists())

    def test_nobody_changes_a_review_they_have_not_given(self):
        with pytest.raises(DomainError):
            review_change(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        with pytest.raises(DomainError):
            review_change(item=self.other, reviewer=self.people["reviewer"], version=1, **ACCEPT)


class ReviewChangeApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.benchmark, (self.item, _other) = assigned_benchmark(self.people)
        self.url = reverse("api-item-review-mine", args=[self.item.pk])

    def api(self, persona: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(self.people[persona])
        return client

    def test_put_changes_my_verdict_and_delete_withdraws_it(self):
        api = self.api("reviewer")
        posted = api.post(
            reverse("api-item-reviews", args=[self.item.pk]),
            {"version": 1, **REJECT},
            format="json",
        )
        self.assertEqual(posted.status_code, 201)
        changed = api.put(self.url, {"version": 1, "verdict": "accept"}, format="json")
        self.assertEqual(changed.status_code, 200)
        self.assertEqual(changed.json()["verdict"], "accept")
        self.assertEqual(api.delete(f"{self.url}?version=1").status_code, 204)
        self.assertEqual(
            list(ReviewChange.objects.values_list("action", "verdict")),
            [("changed", "reject"), ("withdrawn", "accept")],
        )
        self.assertEqual(api.delete(self.url).status_code, 400)  # no version given

    def test_after_the_other_review_a_change_is_403(self):
        api = self.api("reviewer")
        api.post(reverse("api-item-reviews", args=[self.item.pk]), {"version": 1, **REJECT},
                 format="json")  # fmt: skip
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        response = api.put(self.url, {"version": 1, "verdict": "accept"}, format="json")
        self.assertEqual(response.status_code, 403)
        self.assertEqual(response.json()["code"], "review_closed")
        self.assertEqual(api.delete(f"{self.url}?version=1").status_code, 403)

    def test_roles_and_methods(self):
        self.assertEqual(APIClient().put(self.url, {}, format="json").status_code, 401)
        for persona in ("adjudicator", "curator", "outsider"):
            response = self.api(persona).put(self.url, {"version": 1, "verdict": "accept"},
                                              format="json")  # fmt: skip
            self.assertEqual(response.status_code, 403, persona)
        self.assertEqual(self.api("reviewer").get(self.url).status_code, 405)
        nothing = self.api("reviewer").put(self.url, {"version": 1, "verdict": "accept"},
                                           format="json")  # fmt: skip
        self.assertEqual(nothing.status_code, 400)  # no review of mine to change


class ReviewChangePageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.benchmark, (self.item, self.other) = assigned_benchmark(self.people)
        self.url = reverse("review-item", args=[self.item.pk])
        self.client.force_login(self.people["reviewer"])

    def page_form(self, query: str = "") -> PageForm:
        return PageForm(self.client.get(self.url + query), "//form[@data-review-form]")

    def decide(self, button: str, query: str = "", headers=None, **typed):
        """Open the review page (`?change=1` to change), type `typed`, press `button`."""
        form = self.page_form(query)
        for name, value in typed.items():
            form.set(name, value)
        return form.press(f"//button[@data-verdict='{button}']").submit(
            self.client, **(headers or {})
        )

    def test_my_review_offers_change_and_withdraw_until_the_other_review_is_in(self):
        self.decide("reject", reason="duplicate")
        page = self.client.get(self.url)
        self.assertContains(page, "data-change-verdict")
        self.assertContains(page, "data-withdraw-form")
        opened = self.client.get(f"{self.url}?change=1", **HTMX)
        self.assertContains(opened, 'name="changing" value="1"')
        self.assertContains(opened, 'data-mode="reject"')
        self.assertContains(opened, 'value="duplicate" checked')
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        closed = self.client.get(self.url)
        self.assertNotContains(closed, "data-change-verdict")
        self.assertContains(closed, "data-verdict-final")
        # ?change=1 cannot reopen a closed verdict either.
        self.assertNotContains(self.client.get(f"{self.url}?change=1"), 'name="changing"')

    def test_changing_the_verdict_stays_on_the_item_and_the_history_shows_both(self):
        self.decide("reject", reason="duplicate")
        response = self.decide("accept", "?change=1", HTMX)
        self.assertContains(response, "Your verdict is changed.")
        self.assertEqual(Review.objects.get(item=self.item).verdict, "accept")
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **ACCEPT)
        history = self.client.get(reverse("item-history", args=[self.item.pk]))
        self.assertContains(history, "data-review-change")
        self.assertContains(history, "Verdict changed")

    def test_withdrawing_brings_the_decision_form_back(self):
        self.decide("accept")
        withdraw = PageForm(self.client.get(self.url), "//form[@data-withdraw-form]")
        response = withdraw.press("//button[@data-withdraw]").submit(self.client, **HTMX)
        self.assertContains(response, "Your verdict is withdrawn")
        self.assertContains(response, "data-review-form")
        self.assertFalse(Review.objects.exists())
        self.assertEqual(
            self.client.get(reverse("review-withdraw", args=[self.item.pk])).status_code, 405
        )

    def test_a_refused_change_keeps_the_typed_edit_in_the_work_area(self):
        self.decide("accept")
        changing = self.page_form("?change=1")  # opened while the other review is not in
        review_submit(item=self.item, reviewer=self.people["reviewer2"], version=1, **REJECT)
        changing.set("question", "My better question?").set("answer_pick", "1")
        changing.set("comment", "typed with care").press("//button[@data-verdict='edit']")
        response = changing.submit(self.client, **HTMX)
        self.assertEqual(response.status_code, 403)
        html = response.content.decode()
        self.assertIn("data-review-work", html)  # the work area partial, not a bare page
        self.assertIn("Only adjudication changes the outcome now", html)
        self.assertIn("data-draft-kept", html)
        self.assertIn("My better question?", html)
        self.assertIn("typed with care", html)
        self.assertEqual(Review.objects.get(reviewer=self.people["reviewer"]).verdict, "accept")

    def test_already_reviewed_in_another_tab_opens_the_draft_as_a_change(self):
        second_tab = self.page_form()
        self.decide("accept")  # in the first tab
        second_tab.set("reason", "ambiguous").set("comment", "second tab")
        second_tab.press("//button[@data-verdict='reject']")
        response = second_tab.submit(self.client, **HTMX)
        self.assertContains(response, "already reviewed", status_code=400)
        self.assertContains(response, 'name="changing" value="1"', status_code=400)
        self.assertContains(response, "second tab", status_code=400)
        self.assertContains(response, 'value="ambiguous" checked', status_code=400)
