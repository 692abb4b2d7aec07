"""The header of a release's NAME.tsv, the names VLMEvalKit reads right, and the groups its
report breaks accuracy down by (besides split): `category` and `l2-category`."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# VLMEvalKit scores a dataset circularly when its name contains one of these.
FORBIDDEN_NAME_PARTS = ("mmbench", "ccbench", "circular", "mmcr")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
DEFAULT_COLUMNS = [
    "index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category",
    "split",
]  # fmt: skip


@dataclass(frozen=True)
class ReportColumns:
    """Which item fields fill `category` and `l2-category`: EndoBench category/task, MedQ-DEG
    modality/degradation ("clean" for clean images), Gastric-X task/subtask."""

    category: str
    l2_category: str

    def values(self, item) -> tuple[str, str]:
        category = getattr(item, self.category)
        l2 = getattr(item, self.l2_category)
        if self.l2_category == "degradation_type" and not l2:
            l2 = "clean"
        return category, l2


REPORT_COLUMNS = {
    "endobench": ReportColumns("category", "task"),
    "medqdeg": ReportColumns("modality", "degradation_type"),
    "gastricx": ReportColumns("task", "subtask"),
    "vlmeval": ReportColumns("category", "l2_category"),
}
PLAIN_COLUMNS = ReportColumns("category", "l2_category")


def name_problem(name: str) -> str | None:
    """Why VLMEvalKit would misread `name`, or a folder could not bear it: "unsafe", or the
    part that makes VLMEvalKit score circularly; None for a good name."""
    if not SAFE_NAME.fullmatch(name or ""):
        return "unsafe"
    return next((part for part in FORBIDDEN_NAME_PARTS if part in name.lower()), None)


def header(columns: Sequence[str], wanted: Iterable[str], letters: int = 0) -> list[str]:
    """`columns` with the `wanted` ones it lacks appended, and option columns up to `letters`
    options inserted after its last option column (VLMEvalKit reads every single-letter one)."""
    found = list(columns)
    have = [c for c in found if len(c) == 1 and c.isupper()]
    after = found.index(have[-1]) + 1 if have else len(found)
    found[after:after] = [c for c in string.ascii_uppercase[:letters] if c not in have]
    return found + [c for c in dict.fromkeys(wanted) if c not in found]


PART_BYTES = 1 << 30  # VLMEvalKit moves a TSV over 1 GB to its local layout; we split there too
TEMP_MARK = ".partial-"


@dataclass(frozen=True)
class ExportOptions:
    """What an export writes: the defaults are a plain snapshot, `release()` a versioned release.

    Both write the same TSV columns (the family's category / l2-category, the taxonomy and pair
    columns), so that VLMEvalKit breaks a selection's accuracy down alike in either."""

    report_columns: bool = True  # the family's category / l2-category and taxonomy columns
    local_layout: bool | None = False  # NAME_local.tsv + images/; None: past part_bytes
    coco: bool = False
    withhold_split: str = ""  # to NAME_test.tsv, its answers to NAME_test_answers.json
    part_bytes: int | None = None  # NAME.tsv is also written in parts of about this size
    version: str = ""
    box_volumes: bool = False  # boxes/: NIfTI label maps and DICOM SEG of the 3D boxes

    @classmethod
    def release(
        cls,
        *,
        version="",
        withhold_split="",
        part_bytes=PART_BYTES,
        local_layout=None,
        box_volumes=False,
    ):
        return cls(True, local_layout, True, withhold_split, part_bytes, version, box_volumes)


@dataclass
class ExportResult:
    folder: Path
    item_count: int
    manifest: dict
    formula_cells: dict  # {"total": n, "cells": [[index, column, text], ...]} (the first ones)


FORMULA_LISTED = 100
