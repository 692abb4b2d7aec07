"""The benchmark hub: counts by status and kind, and each role's actions (views/benchmarks.py)."""

from __future__ import annotations

from django.urls import reverse
from django.utils import translation

from annotations.access import CURATOR, REVIEWER
from annotations.models import Item, ItemKind, ItemStatus
from tests.access.helpers import (
    SECRET,
    AccessTestCase,
    assigned,
    end_baseline,
    open_baseline,
    people_with_combinations,
    review,
    secret_reject,
)
from tests.factories import make_benchmark, make_item, make_user


def actions(response) -> set[str]:
    return {action.key for group in response.context["groups"] for action in group.actions}


class HubTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        reviewers = [cls.people["reviewer"], cls.people["reviewer2"]]
        cls.benchmark, cls.items = assigned("hubbed", reviewers, items=3)
        make_item(cls.benchmark, kind=ItemKind.OPEN, answer="", reference="A polyp.")
        make_item(cls.benchmark, status=ItemStatus.AGREED)
        cls.url = reverse("benchmark", args=[cls.benchmark.name])

    def test_it_counts_items_by_status_and_kind(self):
        response = self.page("curator", self.url)
        hub = response.context["hub"]
        self.assertEqual(hub.by_status, {"in_review": 3, "pending": 1, "agreed": 1})
        self.assertEqual(hub.kind_rows, [("mcq", "Multiple choice", 4), ("open", "Open answer", 1)])
        self.assertEqual((hub.total, hub.curated, round(hub.percent_curated)), (5, 1, 20))
        self.assertContains(response, 'data-kind="open">Open answer <b>1</b>', html=False)
        self.assertContains(response, "5 items · 1 curated (20%)")

    def test_a_curator_gets_every_curating_action_with_the_reviewers_load(self):
        response = self.page("curator", self.url)
        self.assertTrue(
            {"assign", "baseline-open", "import", "releases", "release-new", "runs"}
            <= actions(response)
        )
        self.assertTrue({"leaderboard", "triage", "agreement", "degrade"} <= actions(response))
        self.assertContains(response, reverse("review-assign", args=["hubbed"]))
        self.assertContains(response, reverse("review-assign", args=["hubbed"]) + "#baseline")
        self.assertContains(response, reverse("benchmark-releases", args=["hubbed"]))
        self.assertContains(response, "1 pending, not yet assigned")
        load = {r.username: (r.open_here, r.open_count) for r in response.context["hub"].reviewers}
        self.assertEqual(load["alice"], (3, 3))
        self.assertEqual(load["bob"], (3, 3))
        self.assertEqual(load["frank"], (0, 0))  # a reviewer with no work yet is listed too
        self.assertNotIn("dave", load)  # a curator is no reviewer

    def test_a_reviewer_gets_their_own_work_and_no_curating_action(self):
        review(self.items[0], self.people["reviewer"])
        response = self.page("reviewer", self.url)
        self.assertEqual(actions(response), {"review", ""})
        for name in ("review-assign", "benchmark-releases", "triage", "agreement", "leaderboard"):
            self.assertNotContains(response, reverse(name, args=["hubbed"]))
        self.assertNotContains(response, reverse("benchmark-import"))
        self.assertNotContains(response, "data-reviewer-load")
        self.assertContains(response, "2 open · 1 done")
        self.assertEqual(response.context["hub"].reviewers, [])

    def test_a_blinded_reviewer_sees_nothing_of_the_other_review(self):
        secret_reject(self.items[0], self.people["reviewer2"])  # alice's review is still open
        response = self.page("reviewer", self.url)
        self.assert_hidden(response, 200, SECRET, "ambiguous", "Rejected <b>1")
        self.assertEqual(response.context["hub"].by_status["in_review"], 3)
        self.assertNotContains(response, reverse("item-history", args=[self.items[0].pk]))

    def test_an_adjudicator_is_sent_to_the_disputes(self):
        review(self.items[0], self.people["reviewer"], "accept")
        review(self.items[0], self.people["reviewer2"], "reject", reason="ambiguous")
        response = self.page("adjudicator", self.url)
        self.assertIn("adjudicate", actions(response))
        # The disputes this adjudicator may settle, in this benchmark's own dispute list.
        self.assertContains(response, "1 for you to settle")
        self.assertContains(response, reverse("adjudication") + "?benchmark=hubbed")
        self.assertNotIn("assign", actions(response))

    def test_a_curator_answering_a_baseline_loses_the_pages_made_of_answers(self):
        grace = self.people["curator_reviewer"]
        run = open_baseline(self.benchmark, grace, self.people["curator"])
        response = self.page("curator_reviewer", self.url)
        self.assertContains(response, "data-gold-hidden")
        hidden = {"leaderboard", "triage", "agreement", "releases", "release-new", "runs"}
        self.assertFalse(hidden & actions(response))
        self.assertIn("assign", actions(response))
        end_baseline(run)
        self.assertTrue(hidden <= actions(self.page("curator_reviewer", self.url)))

    def test_the_kind_filter_narrows_the_list(self):
        response = self.page("curator", self.url + "?kind=open")
        self.assertEqual([i.kind for i in response.context["page"]], ["open"])

    def test_thumbnails_not_full_images_are_listed(self):
        response = self.page("curator", self.url)
        sha = self.items[0].item_images.get().image.sha256
        self.assertContains(response, f"{reverse('image', args=[sha])}?w=96")

    def test_its_queries_do_not_grow_with_the_data(self):
        self.client.force_login(self.people["curator"])
        self.client.get(self.url)  # warm the session
        # session, user, groups, benchmark, status×kind, other counts, reviewer load, page
        # count, categories, page rows, their images (2)
        with self.assertNumQueries(12):
            self.client.get(self.url)
        for _ in range(3):
            make_item(self.benchmark, kind=ItemKind.LABEL, answer="T2")
        make_user("newcomer", REVIEWER)
        with self.assertNumQueries(12):
            response = self.client.get(self.url)
        self.assertEqual(response.context["hub"].by_kind["label"], 3)

    def test_outside_the_scope_it_is_404_and_without_a_role_403(self):
        self.assertEqual(self.page("elsewhere", self.url).status_code, 404)
        self.assertEqual(self.page("outsider", self.url).status_code, 403)

    def test_anonymous_is_sent_to_log_in_and_post_is_refused(self):
        response = self.client.get(self.url)
        self.assertEqual(response.status_code, 302)
        self.client.force_login(self.people["curator"])
        self.assertEqual(self.client.post(self.url).status_code, 405)
        self.assertEqual(Item.objects.filter(benchmark=self.benchmark).count(), 5)


class TopBarTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        cls.people["everything"] = make_user("zed", REVIEWER, CURATOR, "adjudicator")

    def test_each_role_sees_the_menus_of_its_pages(self):
        reviewer = self.page("reviewer", "/").content.decode()
        self.assertIn('data-navgroup="review"', reviewer)
        self.assertNotIn('data-navgroup="curate"', reviewer)
        self.assertNotIn(reverse("releases"), reviewer)
        self.assertNotIn(reverse("runs"), reviewer)
        curator = self.page("curator", "/").content.decode()
        for group in ("review", "curate", "models", "admin"):
            self.assertIn(f'data-navgroup="{group}"', curator)
        for name in ("releases", "runs", "jobs", "benchmark-import", "triage-index"):
            self.assertIn(reverse(name), curator)
        self.assertNotIn(reverse("review-queue"), curator)

    def test_the_current_page_is_marked_in_its_menu(self):
        page = self.page("everything", reverse("releases")).content.decode()
        self.assertIn(f'<a href="{reverse("releases")}" aria-current="page">', page)


class HubRunLinkTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        cls.benchmark, _items = assigned("runfrom", [cls.people["reviewer"]], items=1, per_item=1)
        assigned("another", [cls.people["reviewer"]], items=1, per_item=1, first_index=20)

    def test_the_run_form_opened_from_a_hub_preselects_its_benchmark(self):
        hub = self.page("curator", reverse("benchmark", args=["runfrom"]))
        url = next(a.url for g in hub.context["groups"] for a in g.actions if a.key == "runs")
        form = self.client.get(url).content.decode()
        self.assertRegex(form, r'<option value="runfrom" selected>')
        self.assertNotRegex(form, r'<option value="another" selected>')


class HumanLabelsTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        benchmark = make_benchmark("gx-labels", family="gastricx")
        make_item(benchmark, category="tnm_classification")

    def test_task_keys_read_as_words_in_english_and_chinese(self):
        url = reverse("benchmark", args=["gx-labels"])
        english = self.page("curator", url).content.decode()
        self.assertIn("<td>TNM classification</td>", english)
        self.assertIn(">TNM classification</option>", english)
        self.assertNotIn("<td>tnm_classification</td>", english)
        # Inside override: the request's language must not stay active for the next tests.
        with translation.override("zh-hans"):
            chinese = self.client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        self.assertNotIn("<td>tnm_classification</td>", chinese)
        self.assertNotIn("<td>TNM classification</td>", chinese)
        self.assertIn("<td>TNM 分期</td>", chinese)

    def test_phases_and_box_labels_read_as_words(self):
        from annotations.labels import box_label, phase_label

        self.assertEqual(
            (phase_label("non_contrast"), box_label("lymph_node")), ("Non-contrast", "Lymph node")
        )
        self.assertEqual(phase_label("odd"), "odd")
