"""The items of one imported Gastric-X case, one or more per task of the benchmark.

- VQA: one multiple-choice item per question of case.json;
- report generation: one open item per report (diagnostic: from all of the case's data; CT
  report: from the CT; endoscopy report: from the endoscopy image), the report its reference;
- classification: one label item per TNM field (the whole code, T, N and M), answers from the
  benchmark's label sets;
- localization: one box item per tumor box and phase, the box its target;
- retrieval: one pair per report (the report belongs to this case), confirmed by reviewers.

Item texts are data, not interface: they stay in English, as the imported questions do.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

from annotations.formats.errors import RowProblem
from annotations.formats.gastricx import REPORT_KINDS, TNM_FIELDS, CaseData, tnm_label_sets
from annotations.models import Box, Case, Item, ItemImage, ItemKind, ItemRevision, RevisionReason

TASK_VQA = "vqa"
TASK_REPORT = "report_generation"
TASK_CLASSIFICATION = "classification"
TASK_LOCALIZATION = "localization"
TASK_RETRIEVAL = "retrieval"
LOCALIZED_LABELS = ("tumor",)

REPORT_NAMES = {
    "diagnostic": "diagnostic report",
    "ct": "CT report",
    "endoscopy": "endoscopy report",
}
REPORT_QUESTIONS = {
    "diagnostic": "Write the diagnostic report of this case from all of its images and indicators.",
    "ct": "Write the CT report of this case from its CT phases.",
    "endoscopy": "Write the endoscopy report of this case from its endoscopy image.",
}
LABEL_QUESTIONS = {
    "tnm": "What is the TNM stage of this case?",
    "t": "What is the T stage (depth of tumor invasion) of this case?",
    "n": "What is the N stage (regional lymph nodes) of this case?",
    "m": "What is the M stage (distant metastasis) of this case?",
}
PHASE_NAMES = {
    "non_contrast": "non-contrast",
    "arterial": "arterial",
    "venous": "venous",
    "delayed": "delayed",
}
# A classification item offers its label set as the options A, B, ... (VLMEvalKit's
# multiple-choice layout, `inference.task_prompts.label_options`): one letter per label.
MAX_LABELS = len(string.ascii_uppercase)
# Items whose task is judged from the CT alone carry no endoscopy image.
_CT_ONLY = {(TASK_REPORT, "ct"), (TASK_LOCALIZATION, None)}


def case_items_create(
    *, case: Case, data: CaseData, boxes: list[Box], next_index: int, user
) -> int:
    """Create the case's items of every task with their first revision; the next free index."""
    drafts = (
        _vqa_items(data)
        + _report_items(data)
        + _label_items(data)
        + _box_items(boxes)
        + _retrieval_items(data)
    )
    items = Item.objects.bulk_create(
        Item(
            benchmark=case.benchmark,
            case=case,
            source_index=next_index + number,
            extra={"case_id": case.case_id, **fields.pop("extra", {})},
            **fields,
        )
        for number, fields in enumerate(drafts)
    )
    if case.endoscopy_image_id:
        ItemImage.objects.bulk_create(
            ItemImage(item=item, image_id=case.endoscopy_image_id, position=0)
            for item in items
            if not _ct_only(item)
        )
    ItemRevision.objects.bulk_create(
        ItemRevision(
            item=item,
            version=1,
            content=item.content(),
            reason=RevisionReason.IMPORTED,
            author=user,
        )
        for item in items
    )
    return next_index + len(items)


def label_set_problems(cases: Sequence[CaseData]) -> list[RowProblem]:
    """A problem on each case whose label would fall past the 26th of its benchmark's label set.

    The whole TNM code's label set is the codes the benchmark's cases hold, so it is known only
    once every case is read; refusing the import here means no run ever meets a label set it
    cannot ask as options A-Z. The reasons stay in the file's own terms (English), as the
    reader's do.
    """
    labelled = [(case.row, case.tnm_labels.by_field()) for case in cases if case.tnm_labels]
    sets = tnm_label_sets([labels["tnm"] for _row, labels in labelled])
    problems = []
    for field in TNM_FIELDS:
        labels = sets.get(field, [])
        if len(labels) <= MAX_LABELS:
            continue
        position = {label: number for number, label in enumerate(labels, start=1)}
        for row, by_field in labelled:
            label = by_field[field]
            if position[label] > MAX_LABELS:
                reason = (
                    f"the benchmark's {field} label set would hold {len(labels)} labels "
                    f"({label} is label {position[label]}); a classification item offers its "
                    f"labels as the options A-Z, so at most {MAX_LABELS}"
                )
                problems.append(RowProblem(row, field, reason, "label_set_too_large"))
    return problems


def _ct_only(item: Item) -> bool:
    report = (item.target or {}).get("report") if item.kind == ItemKind.OPEN else None
    return (item.task, report) in _CT_ONLY or item.kind == ItemKind.BOX


def _vqa_items(data: CaseData) -> list[dict]:
    return [
        {
            "kind": ItemKind.MCQ,
            "question": spec.question,
            "options": list(spec.options),
            "answer": spec.answer,
            "task": spec.task,
            "category": spec.task,
            "extra": dict(spec.extra),
        }
        for spec in data.vqa
    ]


def _report_items(data: CaseData) -> list[dict]:
    return [
        {
            "kind": ItemKind.OPEN,
            "question": REPORT_QUESTIONS[kind],
            "reference": data.reports[kind],
            "target": {"report": kind},
            "task": TASK_REPORT,
            "category": kind,
        }
        for kind in REPORT_KINDS
        if data.reports.get(kind)
    ]


def _label_items(data: CaseData) -> list[dict]:
    if data.tnm_labels is None:
        return []
    labels = data.tnm_labels.by_field()
    return [
        {
            "kind": ItemKind.LABEL,
            "question": LABEL_QUESTIONS[field],
            "answer": labels[field],
            "target": {"field": field},
            "task": TASK_CLASSIFICATION,
            "category": field,
        }
        for field in TNM_FIELDS
    ]


def _box_items(boxes: list[Box]) -> list[dict]:
    # Imported boxes are on a volume (the image boxes of the endoscopy frame are drawn later).
    phases = {box.pk: box.volume.phase for box in boxes if box.volume is not None}
    return [
        {
            "kind": ItemKind.BOX,
            "question": (
                f"Localize the {box.label.replace('_', ' ')} on the "
                f"{PHASE_NAMES[phases[box.pk]]} phase CT."
            ),
            "target": {
                "label": box.label,
                "phase": phases[box.pk],
                "voxel": list(box.voxel),
                "mm": box.mm,
                "box": box.pk,
            },
            "task": TASK_LOCALIZATION,
            "category": phases[box.pk],
        }
        for box in boxes
        if box.label in LOCALIZED_LABELS and box.pk in phases
    ]


def _retrieval_items(data: CaseData) -> list[dict]:
    return [
        {
            "kind": ItemKind.RETRIEVAL,
            "question": f"Does this {REPORT_NAMES[kind]} belong to this case?",
            "reference": data.reports[kind],
            "target": {"report": kind},
            "task": TASK_RETRIEVAL,
            "category": kind,
        }
        for kind in REPORT_KINDS
        if data.reports.get(kind)
    ]
