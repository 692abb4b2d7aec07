"""A classification label set is asked as the options A-Z: an import whose cases would make a
set of more than 26 labels is refused, naming the field, the count and each case past the 26th,
so that no run ever meets it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings

from annotations.formats.gastricx import N_LABELS, read_gastricx_root
from annotations.models import Benchmark
from annotations.services.cases import gastricx_import
from annotations.services.gastricx_items import label_set_problems
from annotations.services.imports import ImportFailed
from tests.cases.builders import case_document, write_case

TINY = {"venous": {"shape": (2, 8, 8), "spacing": (0.8, 0.7, 5.0), "origin": (0.0, 0.0, 0.0)}}
# 28 codes in the label set's own order (T, then N): T1..T4 with each N label, all M0.
CODES = [f"{t}{n}M0" for t in ("T1", "T2", "T3", "T4") for n in N_LABELS]


def write_cases(root: Path, count: int) -> Path:
    for number, code in enumerate(CODES[:count]):
        case_id = f"GX-L-{number:02d}"
        document = case_document(case_id, tnm=code, boxes=[], vqa=[])
        write_case(root, case_id, phases=TINY, document=document)
    return root


def stored_files() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_an_import_making_27_tnm_labels_is_refused_at_the_case_past_the_26th(tmp_path, people):
    root = write_cases(tmp_path / "cases", 27)
    with pytest.raises(ImportFailed) as caught:
        gastricx_import(path=root, name="too-many-stages", user=people["curator"])
    problems = caught.value.problems
    assert [(p.row, p.column) for p in problems] == [(27, "tnm")]
    reason = problems[0].reason
    assert "tnm label set would hold 27 labels" in reason
    assert "T4N3aM0 is label 27" in reason and "at most 26" in reason
    assert not Benchmark.objects.filter(name="too-many-stages").exists()
    assert stored_files() == []  # all or nothing: no volume was even read


def test_26_tnm_labels_are_within_the_letters(tmp_path):
    root = write_cases(tmp_path / "cases", 27)
    assert len(label_set_problems(list(read_gastricx_root(root)))) == 1
    shutil.rmtree(root / "GX-L-26")
    assert label_set_problems(list(read_gastricx_root(root))) == []
