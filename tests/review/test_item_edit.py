"""A curator's direct correction of an item: page and API, a new revision over the version seen."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotations.models import Assignment, Item, ItemRevision, ItemStatus, RevisionReason
from tests.factories import make_benchmark, make_item, make_personas
from tests.review.helpers import assigned_benchmark


class ItemEditTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark()
        cls.item = make_item(cls.benchmark, index=7)
        Item.objects.filter(pk=cls.item.pk).update(status=ItemStatus.AGREED)
        # Another item of the benchmark is the reviewer's: the benchmark is in their scope.
        other = make_item(cls.benchmark, index=8)
        Assignment.objects.create(item=other, reviewer=cls.people["reviewer"], slot=1)

    def setUp(self):
        self.url = reverse("item-edit", args=[self.item.pk])
        self.item.refresh_from_db()

    def post(self, **changes):
        data = {
            "version": 1,
            "question": "Which lesion is shown?",
            "hint": "Look at the left wall.",
            "options": ["Polyp", "Ulcer", "Normal mucosa"],
            "answer_pick": "1",
            "answer": "B",
            "note": "Typo in the question",
            **changes,
        }
        return self.client.post(self.url, data)


class ItemEditPageTests(ItemEditTestCase):
    def test_only_curators_open_and_save_it(self):
        self.client.logout()
        self.assertIn("/login/", self.client.get(self.url)["Location"])
        for persona in ("reviewer", "adjudicator", "outsider"):
            self.client.force_login(self.people[persona])
            self.assertEqual(self.client.get(self.url).status_code, 403, persona)
            self.assertEqual(self.post().status_code, 403, persona)
        self.assertEqual(Item.objects.get(pk=self.item.pk).version, 1)

    def test_the_item_page_links_to_it_for_curators_only(self):
        item_url = reverse("item", args=[self.item.pk])
        self.client.force_login(self.people["curator"])
        self.assertContains(self.client.get(item_url), f'href="{self.url}"')
        self.client.force_login(self.people["reviewer"])
        page = self.client.get(item_url)
        self.assertNotContains(page, f'href="{self.url}"')
        # The history stays hidden from reviewers while reviews may be open (blinding).
        self.assertNotContains(page, reverse("item-history", args=[self.item.pk]))

    def test_the_form_shows_the_item_as_it_is(self):
        Item.objects.filter(pk=self.item.pk).update(question="Is <b>this</b> a polyp?")
        self.client.force_login(self.people["curator"])
        response = self.client.get(self.url)
        self.assertContains(response, 'name="version" value="1"')
        self.assertContains(response, "Is &lt;b&gt;this&lt;/b&gt; a polyp?")  # escaped
        self.assertContains(response, 'name="options"', count=len(self.item.options))
        self.assertContains(response, "data-save")

    def test_saving_makes_a_new_revision_with_the_note_and_the_checked_answer(self):
        self.client.force_login(self.people["curator"])
        response = self.post()
        self.assertRedirects(
            response, reverse("item", args=[self.item.pk]), fetch_redirect_response=False
        )
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual(
            (item.version, item.question, item.hint, item.options, item.answer, item.status),
            (
                2,
                "Which lesion is shown?",
                "Look at the left wall.",
                ["Polyp", "Ulcer", "Normal mucosa"],
                "B",
                ItemStatus.AGREED,
            ),
        )
        revision = ItemRevision.objects.get(item=item, version=2)
        self.assertEqual(
            (revision.reason, revision.author, revision.note),
            (RevisionReason.EDITED, self.people["curator"], "Typo in the question"),
        )
        page = self.client.get(response["Location"])
        self.assertContains(page, "Saved as version 2.")

    def test_empty_imported_options_are_not_offered_as_rows(self):
        Item.objects.filter(pk=self.item.pk).update(options=["Polyp", "Ulcer", "", ""], answer="B")
        self.client.force_login(self.people["curator"])
        response = self.client.get(self.url)
        self.assertContains(response, 'name="options"', count=2)
        self.assertContains(response, 'name="answer_pick" value="1" checked')

    def test_an_empty_row_before_the_checked_one_does_not_shift_the_answer(self):
        self.client.force_login(self.people["curator"])
        # The browser sends the checked row's position; the empty row is dropped on save.
        self.post(options=["Polyp", "", "Ulcer", "Normal mucosa"], answer_pick="2", answer="C")
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual((item.options, item.answer), (["Polyp", "Ulcer", "Normal mucosa"], "B"))

    def test_a_stale_version_keeps_the_draft_beside_the_item_as_it_now_is(self):
        Item.objects.filter(pk=self.item.pk).update(version=3, question="Changed meanwhile")
        self.client.force_login(self.people["curator"])
        response = self.post(question="My careful correction")
        self.assertEqual(response.status_code, 409)
        self.assertContains(response, "changed since you opened it", status_code=409)
        self.assertContains(response, "My careful correction", status_code=409)  # the draft
        self.assertContains(response, "Changed meanwhile", status_code=409)  # the item now
        self.assertContains(response, 'name="version" value="3"', status_code=409)
        self.assertEqual(Item.objects.get(pk=self.item.pk).question, "Changed meanwhile")
        # Saving the kept draft again is a decision over version 3, and makes version 4.
        self.post(question="My careful correction", version=3)
        item = Item.objects.get(pk=self.item.pk)
        self.assertEqual((item.version, item.question), (4, "My careful correction"))

    def test_bad_content_is_refused_and_the_draft_kept(self):
        self.client.force_login(self.people["curator"])
        for changes, message in (
            ({"question": "  "}, "The question cannot be empty."),
            ({"options": ["Only one"], "answer_pick": "0"}, "at least two options"),
            ({"options": ["Same", "Same"], "answer_pick": "0"}, "Two options have the same"),
            ({"options": ["Polyp", "", "Ulcer"], "answer_pick": "1"}, "The answer must be"),
        ):
            response = self.post(**changes)
            self.assertEqual(response.status_code, 400, changes)
            self.assertContains(response, message, status_code=400)
            self.assertContains(response, "Typo in the question", status_code=400)
        self.assertEqual(Item.objects.get(pk=self.item.pk).version, 1)

    def test_a_form_that_cannot_be_read_keeps_what_was_typed(self):
        self.client.force_login(self.people["curator"])
        response = self.post(note="n" * 501, question="My long careful question")
        self.assertContains(response, "The form could not be saved.", status_code=400)
        self.assertContains(response, "Note:", status_code=400)
        self.assertContains(response, "My long careful question", status_code=400)
        self.assertEqual(Item.objects.get(pk=self.item.pk).version, 1)

    def test_an_item_under_double_review_cannot_be_edited(self):
        _, (item, _other) = assigned_benchmark(self.people, name="under-review")
        self.client.force_login(self.people["curator"])
        url = reverse("item-edit", args=[item.pk])
        page = self.client.get(url)
        self.assertContains(page, "under double review")
        self.assertContains(page, "data-save disabled")
        response = self.client.post(
            url, {"version": 1, "question": "Q?", "options": ["a", "b"], "answer_pick": "0"}
        )
        self.assertEqual(response.status_code, 400)
        self.assertEqual(Item.objects.get(pk=item.pk).version, 1)


class ItemEditApiTests(ItemEditTestCase):
    def api(self, persona: str) -> APIClient:
        client = APIClient()
        _instance, token = AuthToken.objects.create(user=self.people[persona])
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        return client

    def body(self, **changes):
        content = {"question": "Fixed question?", "options": ["Yes", "No"], "answer": "B"}
        return {"version": 1, "content": content, "note": "Clearer wording", **changes}

    def test_a_curator_patches_the_version_seen(self):
        url = f"/api/items/{self.item.pk}/"
        response = self.api("curator").patch(url, self.body(), format="json")
        self.assertEqual(response.status_code, 200)
        self.assertEqual(
            (response.json()["version"], response.json()["options"], response.json()["answer"]),
            (2, ["Yes", "No"], "B"),
        )
        self.assertEqual(
            ItemRevision.objects.get(item=self.item, version=2).note, "Clearer wording"
        )
        stale = self.api("curator").patch(url, self.body(), format="json")
        self.assertEqual(stale.status_code, 409)
        self.assertEqual((stale.json()["code"], stale.json()["current_version"]), ("conflict", 2))

    def test_only_curators_patch_and_bad_content_is_400(self):
        url = f"/api/items/{self.item.pk}/"
        self.assertEqual(APIClient().patch(url, self.body(), format="json").status_code, 401)
        for persona in ("reviewer", "adjudicator", "outsider"):
            response = self.api(persona).patch(url, self.body(), format="json")
            self.assertEqual(response.status_code, 403, persona)
        self.assertEqual(self.api("reviewer").get(url).status_code, 200)
        bad = self.body(content={"question": "Q", "options": ["a", "b"], "answer": "C"})
        response = self.api("curator").patch(url, bad, format="json")
        self.assertEqual(response.status_code, 400)
        self.assertIn("letter of one of the options", response.json()["detail"])
        self.assertEqual(Item.objects.get(pk=self.item.pk).version, 1)
