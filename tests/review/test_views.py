from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from annotations.models import Assignment, Item, ItemStatus, Review, Run
from annotations.services.review import review_submit
from tests.factories import make_item, make_personas
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review, edit
from tests.support.page_forms import PageForm

HTMX = {"HTTP_HX_REQUEST": "true"}
ACCEPT_BUTTON = "//button[@data-verdict='accept']"
EDIT_BUTTON = "//button[@data-verdict='edit']"


class ViewTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def login(self, persona: str):
        self.client.force_login(self.people[persona])

    def assert_access(self, url: str, allowed: list[str], method: str = "get"):
        """Anonymous → login, every persona outside `allowed` → 403, wrong method → 405."""
        self.client.logout()
        response = getattr(self.client, method)(url)
        self.assertEqual(response.status_code, 302, url)
        self.assertIn("/login/", response["Location"])
        for persona in ("reviewer", "adjudicator", "curator", "outsider"):
            if persona in allowed:
                continue
            self.login(persona)
            self.assertEqual(getattr(self.client, method)(url).status_code, 403, (url, persona))
        self.login(allowed[0])
        wrong = "put" if method == "post" else "delete"
        self.assertEqual(getattr(self.client, wrong)(url).status_code, 405, url)


class ReviewPageTests(ViewTestCase):
    def setUp(self):
        self.benchmark, (self.item, self.other) = assigned_benchmark(self.people)
        self.url = reverse("review-item", args=[self.item.pk])

    def test_the_queue_sends_the_reviewer_to_the_next_item(self):
        self.login("reviewer")
        response = self.client.get(reverse("review-queue"))
        self.assertRedirects(response, self.url)

    def test_the_review_page_shows_the_item_progress_and_the_three_verdicts(self):
        self.login("reviewer")
        response = self.client.get(self.url)
        self.assertContains(response, self.item.question)
        self.assertContains(response, 'data-verdict="accept"')
        self.assertContains(response, 'data-mode-set="reject"')
        self.assertContains(response, "<b>0</b> / 2")
        self.assertContains(response, "Contains PHI")

    def test_access_to_every_review_url(self):
        self.assert_access(reverse("review-queue"), ["reviewer"])
        self.assert_access(self.url, ["reviewer"])
        self.assert_access(reverse("review-assign", args=[self.benchmark.name]), ["curator"])
        self.assert_access(reverse("adjudication"), ["adjudicator"])
        self.assert_access(reverse("adjudicate", args=[self.item.pk]), ["adjudicator"])
        self.assert_access(reverse("agreement-index"), ["curator", "adjudicator"])
        self.assert_access(
            reverse("agreement", args=[self.benchmark.name]), ["curator", "adjudicator"]
        )
        self.assert_access(reverse("baseline-list"), ["reviewer", "adjudicator"])
        self.assert_access(
            reverse("baseline-open", args=[self.benchmark.name]), ["curator"], method="post"
        )

    def page_form(self) -> PageForm:
        """The review page's form as rendered for the logged-in reviewer."""
        return PageForm(self.client.get(self.url), "//form[@data-review-form]")

    def test_an_unassigned_item_is_not_found(self):
        self.login("reviewer")
        stranger = make_item(self.benchmark, index=99)
        response = self.client.get(reverse("review-item", args=[stranger.pk]))
        self.assertEqual(response.status_code, 404)

    def test_submitting_with_htmx_swaps_in_the_next_item(self):
        self.login("reviewer")
        form = self.page_form().set("seconds_spent", "12.5")  # the page's timer fills it
        response = form.press(ACCEPT_BUTTON).submit(self.client, **HTMX)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["HX-Push-Url"], reverse("review-item", args=[self.other.pk]))
        self.assertNotContains(response, "<html")  # only the work area
        self.assertContains(response, "<b>1</b> / 2")
        review = Review.objects.get(reviewer=self.people["reviewer"])
        self.assertEqual(
            (review.item_id, review.verdict, review.seconds_spent), (self.item.pk, "accept", 12.5)
        )

    def test_an_edit_posts_question_options_and_answer(self):
        self.login("reviewer")
        form = self.page_form().set("question", "Which lesion?").set("comment", "Option order")
        form.set_all("options", ["Ulcer", "Polyp", "", "Erosion"]).set("answer_pick", "3")
        form.press(EDIT_BUTTON).submit(self.client, **HTMX)
        review = Review.objects.get()
        self.assertEqual(review.content["options"], ["Ulcer", "Polyp", "Erosion"])
        self.assertEqual(review.content["answer"], "C")

    def test_the_checked_row_is_the_answer_even_after_an_empty_row(self):
        # The browser's letter counts rows; the saved options drop the empty one, so the
        # answer is taken from the checked row's position (answer_pick), not from that letter.
        self.login("reviewer")
        form = self.page_form().set("question", "Which lesion?").set("answer", "C")
        form.set_all("options", ["Ulcer", "", "Polyp", "Erosion"]).set("answer_pick", "2")
        form.press(EDIT_BUTTON).submit(self.client, **HTMX)
        review = Review.objects.get()
        self.assertEqual(
            (review.content["options"], review.content["answer"]),
            (["Ulcer", "Polyp", "Erosion"], "B"),
        )

    def test_the_last_item_leaves_an_empty_queue(self):
        self.login("reviewer")
        self.client.post(self.url, {"verdict": "accept", "version": 1}, **HTMX)
        url = reverse("review-item", args=[self.other.pk])
        response = self.client.post(
            url, {"verdict": "reject", "reason": "duplicate", "version": 1}, **HTMX
        )
        self.assertContains(response, "Your queue is empty")
        self.assertEqual(response["HX-Push-Url"], reverse("review-queue"))
        self.assertEqual(
            Assignment.objects.filter(
                completed_at__isnull=True, reviewer=self.people["reviewer"]
            ).count(),
            0,
        )

    def test_a_stale_version_shows_a_conflict_with_a_reload_link(self):
        self.login("reviewer")
        form = self.page_form()  # the page shows version 1
        both_review(self.item, self.people, edit(), edit())  # v2 now
        Item.objects.filter(pk=self.item.pk).update(status=ItemStatus.IN_REVIEW)
        Assignment.objects.filter(item=self.item).update(completed_at=None)
        response = form.press(ACCEPT_BUTTON).submit(self.client, **HTMX)
        self.assertEqual(response.status_code, 409)
        self.assertContains(response, "changed since you opened it", status_code=409)
        self.assertContains(response, "Reload this item", status_code=409)
        self.assertEqual(Review.objects.filter(item_version=1).count(), 2)

    def test_a_rejection_without_reason_is_refused_with_a_message(self):
        self.login("reviewer")
        form = self.page_form()  # Submit rejection pressed with no reason chosen
        response = form.press("//button[@data-verdict='reject']").submit(self.client, **HTMX)
        self.assertContains(response, "needs a reason", status_code=400)
        self.assertFalse(Review.objects.exists())


class BlindingTests(ViewTestCase):
    def setUp(self):
        self.benchmark, (self.item, _other) = assigned_benchmark(self.people)
        review_submit(
            item=self.item,
            reviewer=self.people["reviewer2"],
            version=1,
            verdict="reject",
            reason="contains_phi",
            comment="SECRET-COMMENT-OF-BOB",
        )

    def test_the_review_page_does_not_show_the_other_review(self):
        self.login("reviewer")
        for url in (
            reverse("review-item", args=[self.item.pk]),
            reverse("item", args=[self.item.pk]),
        ):
            response = self.client.get(url)
            self.assertEqual(response.status_code, 200)
            self.assertNotContains(response, "SECRET-COMMENT-OF-BOB")
            self.assertNotContains(response, "bob")

    def test_the_history_is_forbidden_to_a_reviewer_until_both_reviews_are_in(self):
        self.login("reviewer")
        url = reverse("item-history", args=[self.item.pk])
        self.assertEqual(self.client.get(url).status_code, 403)
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **ACCEPT)
        response = self.client.get(url)
        self.assertContains(response, "SECRET-COMMENT-OF-BOB")

    def test_the_history_shows_the_whole_lineage_to_a_curator(self):
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **REJECT)
        self.login("curator")
        response = self.client.get(reverse("item-history", args=[self.item.pk]))
        self.assertContains(response, "Imported")
        self.assertContains(response, "Assigned to alice")
        self.assertContains(response, "SECRET-COMMENT-OF-BOB")
        self.client.logout()
        self.assertEqual(
            self.client.get(reverse("item-history", args=[self.item.pk])).status_code, 302
        )
        self.login("outsider")
        self.assertEqual(
            self.client.get(reverse("item-history", args=[self.item.pk])).status_code, 403
        )


class QueryCountTests(ViewTestCase):
    def queries_for(self, size: int) -> tuple[int, int]:
        benchmark, items = assigned_benchmark(self.people, items=size)
        self.login("reviewer")
        url = reverse("review-item", args=[items[size // 2].pk])
        with self.assertNumQueries(self.page_queries):
            self.assertEqual(self.client.get(url).status_code, 200)
        with self.assertNumQueries(self.queue_queries):
            self.client.get(reverse("review-queue"))
        first = Assignment.objects.filter(reviewer=self.people["reviewer"]).order_by("id").first()
        with self.assertNumQueries(self.queue_htmx_queries):
            self.client.get(reverse("review-queue") + f"?after={first.pk}", **HTMX)
        return size

    # session, user, roles, assignment+item+benchmark, images, own reviews, progress
    page_queries = 7
    # session, user, roles, next assignment
    queue_queries = 4
    # + the review page selector (3 queries) and progress
    queue_htmx_queries = 8

    def test_the_review_page_and_queue_cost_the_same_with_3_or_30_items(self):
        self.queries_for(3)
        Assignment.objects.all().delete()
        self.queries_for(30)


class AssignAndBaselineViewTests(ViewTestCase):
    def test_a_curator_assigns_a_benchmark_from_the_page(self):
        from tests.factories import make_benchmark

        benchmark = make_benchmark("assign-me")
        for index in range(4):
            make_item(benchmark, index=index)
        self.login("curator")
        url = reverse("review-assign", args=[benchmark.name])
        self.assertContains(self.client.get(url), "alice")
        response = self.client.post(url, {"reviewers": ["alice", "bob"], "per_item": 2})
        self.assertRedirects(response, url)
        self.assertEqual(Assignment.objects.filter(item__benchmark=benchmark).count(), 8)
        self.assertEqual(Item.objects.filter(benchmark=benchmark, status="in_review").count(), 4)

    def test_a_curator_opens_a_human_baseline_and_the_clinician_answers_blind(self):
        from tests.factories import make_benchmark

        benchmark = make_benchmark("baseline-me")
        item = make_item(benchmark, index=1, answer="C")
        self.login("curator")
        self.client.post(reverse("baseline-open", args=[benchmark.name]), {"clinician": "alice"})
        run = Run.objects.get(kind="human")
        self.login("reviewer")
        page = self.client.get(reverse("baseline", args=[run.pk]))
        self.assertContains(page, item.question)
        self.assertNotContains(page, "correct")
        self.assertNotContains(page, "answer-tag")
        response = self.client.post(
            reverse("baseline", args=[run.pk]),
            {"item": item.pk, "letter": "C", "seconds_spent": 4},
            **HTMX,
        )
        self.assertContains(response, "Session complete")
        run.refresh_from_db()
        self.assertEqual((run.status, run.completed), ("done", 1))
        self.assertTrue(run.predictions.get().hit)
        self.login("reviewer2")
        self.assertEqual(self.client.get(reverse("baseline", args=[run.pk])).status_code, 404)
