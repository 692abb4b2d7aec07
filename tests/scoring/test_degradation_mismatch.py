"""A MedQ-DEG degradation foreign to the item's modality: imported, then a triage reason."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.test import TestCase
from django.urls import reverse

from annotations.formats.medqdeg import MEDQDEG_COLUMNS
from annotations.models import TriageFlag
from annotations.scoring.triage import GROUPS, ItemFacts, broken_item
from annotations.services.imports import benchmark_import
from annotations.services.triage import benchmark_triage
from tests.factories import PASSWORD, make_personas
from tests.formats.builders import b64, jpeg_bytes, write_tsv

MISMATCH = "degradation_modality_mismatch"


def facts(modality: str, kind: str) -> ItemFacts:
    return ItemFacts(
        key=1,
        question="Which organ?",
        options=("liver", "kidney"),
        answer="A",
        modality=modality,
        degradation_type=kind,
    )


def test_a_foreign_degradation_is_a_broken_item_reason():
    [reason] = broken_item(facts("Ultrasound", "low_dose"))
    assert reason.code == MISMATCH and MISMATCH in GROUPS["broken"]
    assert reason.evidence == {"degradation_type": "low_dose", "modality": "Ultrasound"}
    assert 0 < reason.weight < 1


def test_fitting_clean_and_unknown_cases_are_no_reason():
    assert broken_item(facts("CT", "low_dose")) == []
    assert broken_item(facts("Ultrasound", "gaussian_noise")) == []
    assert broken_item(facts("Ultrasound", "")) == []  # a clean image
    assert broken_item(facts("", "low_dose")) == []  # not a MedQ-DEG item


def medqdeg_row(index: int, modality: str, kind: str, severity: str) -> list[str]:
    cells = {
        "index": str(index), "image": b64(jpeg_bytes(color=(index * 40, 90, 60))),
        "question": f"Which organ is shown in image {index}?", "A": "liver", "B": "kidney",
        "C": "", "D": "", "E": "", "answer": "A", "modality": modality,
        "degradation_type": kind, "degradation_severity": severity, "source": "synthetic",
    }  # fmt: skip
    return [cells[name] for name in MEDQDEG_COLUMNS]


class ImportedMismatchTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        with tempfile.TemporaryDirectory() as folder:
            path = write_tsv(
                Path(folder) / "medq.tsv",
                [
                    list(MEDQDEG_COLUMNS),
                    medqdeg_row(1, "Ultrasound", "low_dose", "mild"),
                    medqdeg_row(2, "CT", "low_dose", "severe"),
                    medqdeg_row(3, "Ultrasound", "", "clean"),
                ],
            )
            cls.benchmark = benchmark_import(path=path, family="medqdeg", name="medq-mismatch")
        cls.result = benchmark_triage(benchmark=cls.benchmark)

    def test_the_file_is_imported_whole(self):
        items = self.benchmark.items.order_by("source_index")
        self.assertEqual(
            [(i.source_index, i.modality, i.degradation_type) for i in items],
            [(1, "Ultrasound", "low_dose"), (2, "CT", "low_dose"), (3, "Ultrasound", "")],
        )

    def test_only_the_mismatched_item_is_flagged(self):
        flagged = TriageFlag.objects.filter(benchmark=self.benchmark, code=MISMATCH)
        self.assertEqual([flag.item.source_index for flag in flagged], [1])
        self.assertEqual(self.result.summary["by_code"][MISMATCH], 1)

    def test_the_triage_page_names_and_explains_the_reason(self):
        self.client.login(username=self.people["curator"].username, password=PASSWORD)
        response = self.client.get(
            reverse("triage", args=[self.benchmark.name]), {"reason": MISMATCH}
        )
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "Degradation not of this modality")
        self.assertContains(response, "does not apply to Ultrasound images")
        self.assertEqual(len(list(response.context["page"])), 1)
