"""A human baseline on a Gastric-X benchmark: a clinician answers the classification items from
the label set, scored as a model's classification; reports, boxes and retrieval pairs are left
out of the session with a note saying why, never scored as wrong."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.formats.gastricx import N_LABELS, T_LABELS
from annotations.models import Prediction, RunStatus
from annotations.models.item import LETTERS
from annotations.services.errors import DomainError
from annotations.services.human_baseline import (
    baseline_left_out_notes,
    baseline_options,
    human_answer_submit,
    human_baseline_open,
)
from tests.cases.world import gastric_world
from tests.factories import make_item, make_personas


def letter_of(label: str, labels) -> str:
    return LETTERS[list(labels).index(label)]


class GastricBaselineTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def setUp(self):
        self.world = gastric_world(self.people)
        self.benchmark = self.world.case.benchmark
        self.n_stage = make_item(
            self.benchmark, case=self.world.case, kind="label", question="What is the N stage?",
            options=[], answer="N1", target={"field": "n"}, task="classification", category="n",
        )  # fmt: skip

    def open_session(self, **kwargs):
        return human_baseline_open(
            benchmark=self.benchmark,
            clinician=self.people["reviewer"],
            opened_by=self.people["curator"],
            **kwargs,
        )

    def answer(self, run, item, letter: str):
        return human_answer_submit(run=run, item=item, user=self.people["reviewer"], letter=letter)

    # --- services ------------------------------------------------------------------------

    def test_a_session_asks_the_label_items_and_leaves_the_other_kinds_out_with_why(self):
        run = self.open_session()
        assert run.total == 2  # the T and the N stage
        notes = baseline_left_out_notes(run)
        assert [(str(note["kind"]), note["count"]) for note in notes] == [
            ("Open answer", 1),
            ("Localization", 1),
            ("Retrieval", 1),
        ]
        assert all(str(note["why"]) for note in notes)

    def test_a_label_item_offers_its_label_set_lettered_as_a_model_is_asked(self):
        options = baseline_options(self.world.label, self.benchmark.label_sets)
        assert options == list(zip(LETTERS, T_LABELS, strict=False))
        assert baseline_options(self.world.label, {}) == []  # no label set: nothing to pick

    def test_label_answers_carry_the_label_and_are_scored_as_a_models_classification(self):
        run = self.open_session()
        right = self.answer(run, self.world.label, letter_of("T3", T_LABELS))
        wrong = self.answer(run, self.n_stage, letter_of("N2", N_LABELS).lower())
        assert (right.extracted, right.label, right.hit) == ("H", "T3", True)
        assert (wrong.extracted, wrong.label, wrong.hit) == ("D", "N2", False)
        run.refresh_from_db()
        assert run.status == RunStatus.DONE  # every item it asks is answered
        classification = run.summary["tasks"]["classification"]
        assert classification["accuracy"]["value"] == 0.5
        # Without the labels neither given nor true: t: T3 right (F1 1); n: N1 missed and N2
        # wrongly given (F1 0 each) -> (1 + 0) / 2.
        assert classification["macro_f1_no_support"]["value"] == 0.5
        # scikit-learn's default: every label of the set counts, t's others 0.
        assert classification["macro_f1"]["value"] == pytest.approx((1 / len(T_LABELS) + 0) / 2)
        confusion = classification["by_field"]["n"]["confusion"]
        assert confusion["labels"] == list(N_LABELS)
        assert confusion["matrix"][N_LABELS.index("N1")][N_LABELS.index("N2")] == 1
        assert run.summary["tasks"]["counts"]["report_generation"] == 0  # not scored as wrong
        assert run.summary["overall"]["accuracy"] == 0.5

    def test_a_letter_past_the_label_set_is_refused(self):
        run = self.open_session()
        with pytest.raises(DomainError, match="Pick one of the options"):
            self.answer(run, self.n_stage, LETTERS[len(N_LABELS)])
        assert not Prediction.objects.filter(run=run).exists()

    def test_an_item_of_a_left_out_kind_cannot_be_answered(self):
        run = self.open_session()
        for item in (self.world.report, self.world.localization, self.world.retrieval):
            with pytest.raises(DomainError):
                self.answer(run, item, "A")
        assert not Prediction.objects.filter(run=run).exists()

    def test_a_selection_of_left_out_kinds_only_is_refused_saying_why(self):
        with pytest.raises(DomainError, match="reports, boxes and retrieval pairs are left out"):
            self.open_session(filters={"category": "venous"})

    # --- pages ---------------------------------------------------------------------------

    def test_the_page_offers_the_labels_notes_the_left_out_kinds_and_takes_an_answer(self):
        run = self.open_session()
        url = reverse("baseline", args=[run.pk])
        self.client.force_login(self.people["reviewer"])
        page = self.client.get(url).content.decode()
        assert 'data-letter="H"' in page and "T4b" in page  # the T stage's label set
        assert "T3N1M0" not in page  # the gold stays hidden
        assert page.count("data-left-out-kind") == 3 and "retrieval ranks every case" in page
        response = self.client.post(
            url, {"item": self.world.label.pk, "letter": letter_of("T4a", T_LABELS)}
        )
        assert response.status_code == 302
        prediction = Prediction.objects.get(run=run, item=self.world.label)
        assert (prediction.label, prediction.hit) == ("T4a", False)
        # The API's next item offers the same lettered labels.
        api = APIClient()
        api.force_authenticate(self.people["reviewer"])
        following = api.get(reverse("api-baseline-next", args=[run.pk])).json()
        assert following["item"] == self.n_stage.pk
        assert following["options"] == dict(zip(LETTERS, N_LABELS, strict=False))
        assert self.client.put(url).status_code == 405
        # Another clinician's session does not exist for her; an anonymous visitor logs in.
        self.client.force_login(self.people["reviewer2"])
        assert self.client.get(url).status_code == 404
        self.client.logout()
        assert self.client.get(url).status_code == 302
