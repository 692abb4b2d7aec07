"""Reviewing and adjudicating Gastric-X items of every kind, with the case in view."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse

from annotations.models import Box, Item, ItemRevision, ItemStatus, Review
from annotations.selectors.case_panel import case_panel_data
from annotations.services.errors import DomainError
from annotations.services.human_baseline import human_baseline_open
from annotations.services.review import item_adjudicate, review_submit
from tests.cases.world import REPORTS, gastric_world
from tests.factories import make_personas
from tests.review.helpers import ACCEPT, both_review
from tests.support.page_forms import PageForm

REVIEW_FORM = "//form[@data-review-form]"
EDIT = "//button[@data-verdict='edit']"


def report_edit(text: str) -> dict:
    return {"verdict": "edit", "content": {"reference": text}}


class KindReviewTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.world = gastric_world(self.people)

    # --- services ------------------------------------------------------------------------

    def test_the_same_report_edit_by_both_reviewers_becomes_a_revision(self):
        text = "Wall thickening of the greater curvature.\nTwo perigastric nodes, 9 mm."
        crlf = "  " + text.replace("\n", "\r\n") + "\n"  # as a browser posts it
        item = both_review(self.world.report, self.people, report_edit(text), report_edit(crlf))
        assert (item.status, item.version, item.reference) == (ItemStatus.AGREED, 2, text)
        revision = ItemRevision.objects.get(item=item, version=2)
        assert revision.content["reference"] == text
        assert revision.content["target"] == {"report": "ct"}
        assert revision.reason == "agreed_edit"

    def test_different_report_edits_are_disputed_and_adjudicated_as_a_new_version(self):
        item = both_review(
            self.world.report, self.people, report_edit("Version one."), report_edit("Two.")
        )
        assert item.status == ItemStatus.DISPUTED
        item_adjudicate(
            item=item,
            adjudicator=self.people["adjudicator"],
            choice="new",
            version=item.version,
            content={"reference": "Version three."},
        )
        item.refresh_from_db()
        assert (item.status, item.reference, item.version) == ("adjudicated", "Version three.", 2)

    def test_an_empty_report_is_refused(self):
        with pytest.raises(DomainError, match="cannot be empty"):
            review_submit(
                item=self.world.report, reviewer=self.people["reviewer"], version=1,
                **report_edit(" \r\n "),
            )  # fmt: skip
        assert not Review.objects.exists()

    def test_a_label_is_corrected_only_within_its_label_set(self):
        label = self.world.label
        with pytest.raises(DomainError, match="T5 is not in the label set"):
            review_submit(
                item=label, reviewer=self.people["reviewer"], version=1,
                verdict="edit", content={"answer": "T5"},
            )  # fmt: skip
        both = {"verdict": "edit", "content": {"answer": "T4a"}}
        item = both_review(label, self.people, both, both)
        assert (item.status, item.answer, item.target) == ("agreed", "T4a", {"field": "t"})

    def test_a_box_is_corrected_inside_its_volume_with_new_mm_corners(self):
        box_item = self.world.localization
        outside = {"verdict": "edit", "content": {"voxel": [10, 12, 2, 30, 40, 10]}}
        with pytest.raises(DomainError, match="z1 ≤ 9"):
            review_submit(item=box_item, reviewer=self.people["reviewer"], version=1, **outside)
        corrected = {"verdict": "edit", "content": {"voxel": ["11", "12", "2", "30", "40", "7"]}}
        item = both_review(box_item, self.people, corrected, corrected)
        assert item.status == "agreed"
        assert item.target["voxel"] == [11, 12, 2, 30, 40, 7]
        assert item.target["box"] == self.world.box.pk and item.target["label"] == "tumor"
        # venous: origin (-251.6, 181.4, -890), spacing (0.8, 0.7, 5): corner of voxel (11, 12, 2)
        assert item.target["mm"][0] == pytest.approx([-251.6 + 11 * 0.8, 181.4 + 12 * 0.7, -880])
        assert item.target["mm"][1] == pytest.approx([-251.6 + 29 * 0.8, 181.4 + 39 * 0.7, -860])

    def test_a_retrieval_pair_is_confirmed_or_rejected_never_edited(self):
        with pytest.raises(DomainError, match="retrieval pair"):
            review_submit(
                item=self.world.retrieval, reviewer=self.people["reviewer"], version=1,
                verdict="edit", content={"reference": "Another report."},
            )  # fmt: skip
        item = both_review(self.world.retrieval, self.people, ACCEPT, ACCEPT)
        assert (item.status, item.reference) == ("agreed", REPORTS["ct"])

    # --- pages ---------------------------------------------------------------------------

    def review_url(self, item: Item) -> str:
        return reverse("review-item", args=[item.pk])

    def test_the_review_page_shows_the_case_beside_a_report(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(self.review_url(self.world.report))
        page = response.content.decode()
        assert response.status_code == 200
        assert "data-case-panel" in page and page.count('class="ct-viewport') == 1
        assert "data-out-of-range" in page and "▲ high" in page  # CEA 12.4 above 0–5
        assert page.count("data-out-of-range") == 1  # Hemoglobin is in range
        assert "T3N1M0" in page  # the stage, for reviewers
        assert REPORTS["diagnostic"] in page and REPORTS["endoscopy"] in page
        assert 'name="reference"' in page and REPORTS["ct"] in page  # the report under review
        assert "js/case_panel.js" in page and "hx-disable" in page

    def test_a_label_review_offers_the_label_set(self):
        self.client.force_login(self.people["reviewer"])
        page = self.client.get(self.review_url(self.world.label)).content.decode()
        assert '<option value="T4b">' in page and '<option value="T3" selected>' in page

    def test_a_stale_report_edit_is_a_409_that_keeps_the_draft(self):
        item = self.world.report
        self.client.force_login(self.people["reviewer"])
        form = PageForm(self.client.get(self.review_url(item)), REVIEW_FORM)  # version 1
        Item.objects.filter(pk=item.pk).update(version=2)
        ItemRevision.objects.create(item=item, version=2, content=item.content(), reason="edited")
        draft = "My careful rewrite of the <CT> report."
        response = form.set("reference", draft).press(EDIT).submit(self.client)
        assert response.status_code == 409
        page = response.content.decode()
        assert "My careful rewrite of the &lt;CT&gt; report." in page
        assert not Review.objects.exists()

    def test_a_submitted_report_edit_shows_as_my_edit(self):
        self.client.force_login(self.people["reviewer"])
        url = self.review_url(self.world.report)
        form = PageForm(self.client.get(url), REVIEW_FORM)
        response = form.set("reference", REPORTS["ct"] + " No ascites.").press(EDIT)
        response = response.submit(self.client)
        assert response.status_code == 302
        page = self.client.get(url).content.decode()
        assert "data-own-edit" in page and '<ins class="d-ins"> No ascites.</ins>' in page

    def test_a_blinded_reviewer_sees_no_box_of_the_other_reviewer(self):
        drawn = Box.objects.create(
            volume=self.world.volume, label="lymph_node", x0=1, y0=1, z0=1, x1=5, y1=5, z1=3,
            author=self.people["reviewer2"],
        )  # fmt: skip
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(self.review_url(self.world.localization))
        config = response.context["case_panel"]["viewer_config"]
        ids = [box["id"] for volume in config["volumes"] for box in volume["boxes"]]
        assert ids == [self.world.box.pk]
        assert "reviewer2" not in response.content.decode()
        # The adjudicator, who may read every review, sees it.
        item = both_review(
            self.world.localization, self.people,
            {"verdict": "edit", "content": {"voxel": [1, 1, 1, 5, 5, 3]}}, ACCEPT,
        )  # fmt: skip
        self.client.force_login(self.people["adjudicator"])
        response = self.client.get(reverse("adjudicate", args=[item.pk]))
        config = response.context["case_panel"]["viewer_config"]
        ids = {box["id"] for volume in config["volumes"] for box in volume["boxes"]}
        assert ids == {self.world.box.pk, drawn.pk}

    def test_the_adjudicator_reads_the_two_report_edits_as_escaped_word_diffs(self):
        first = REPORTS["ct"].replace("two", "three <b>enlarged</b>")
        second = REPORTS["ct"] + " No ascites."
        item = both_review(self.world.report, self.people, report_edit(first), report_edit(second))
        self.client.force_login(self.people["adjudicator"])
        response = self.client.get(reverse("adjudicate", args=[item.pk]))
        page = response.content.decode()
        assert response.status_code == 200 and "data-case-panel" in page
        assert '<del class="d-del">two</del>' in page
        assert '<ins class="d-ins">three &lt;b&gt;enlarged&lt;/b&gt;</ins>' in page
        assert "<b>enlarged</b>" not in page
        assert '<ins class="d-ins"> No ascites.</ins>' in page
        assert page.count("data-report-diff") == 3  # A, B, and A against B

    def test_with_the_gold_hidden_the_case_panel_has_no_report_stage_or_box(self):
        # A clinician answering a human baseline of the benchmark (selectors.visibility).
        data = case_panel_data(
            self.world.report, user=self.people["reviewer"], gold=False, blinded=True
        )
        assert (data.reports, data.case.tnm, data.box_ids) == ({}, "", set())
        assert [v.phase for v in data.volumes] == ["venous"]  # the images stay
        shown = case_panel_data(
            self.world.report, user=self.people["reviewer"], gold=True, blinded=True
        )
        assert shown.reports == REPORTS and shown.box_ids == {self.world.box.pk}

    def test_a_curator_corrects_a_settled_report_directly_and_a_stale_save_keeps_the_draft(self):
        item = both_review(self.world.report, self.people, ACCEPT, ACCEPT)
        self.client.force_login(self.people["curator"])
        url = reverse("item-edit", args=[item.pk])
        page = self.client.get(url).content.decode()
        assert 'name="reference"' in page and 'name="options"' not in page
        response = self.client.post(url, {"version": 1, "reference": "Corrected.", "note": "typo"})
        assert response.status_code == 302
        item.refresh_from_db()
        assert (item.version, item.reference) == (2, "Corrected.")
        stale = self.client.post(url, {"version": 1, "reference": "My <draft>.", "note": ""})
        assert stale.status_code == 409 and "My &lt;draft&gt;." in stale.content.decode()
        assert Item.objects.get(pk=item.pk).reference == "Corrected."

    def test_the_case_page_hides_reports_stage_and_boxes_from_a_baseline_clinician(self):
        url = reverse("case", args=[self.world.case.pk])
        self.client.force_login(self.people["reviewer"])
        shown = self.client.get(url)
        assert REPORTS["ct"] in shown.content.decode() and "T3N1M0" in shown.content.decode()
        human_baseline_open(
            benchmark=self.world.case.benchmark,
            clinician=self.people["reviewer"],
            opened_by=self.people["curator"],
        )
        hidden = self.client.get(url)
        page = hidden.content.decode()
        assert hidden.status_code == 200 and 'class="ct-viewport' in page  # the images stay
        assert all(text not in page for text in REPORTS.values()) and "T3N1M0" not in page
        boxes = [b for v in hidden.context["viewer_config"]["volumes"] for b in v["boxes"]]
        assert boxes == []
        listed = self.client.get(reverse("cases")).content.decode()
        assert "GX-R-1" in listed and "T3N1M0" not in listed
