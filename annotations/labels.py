"""Interface names of the benchmark fields and degradation kinds (their values stay as imported)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from annotations.formats.taxonomy import normalise_modality
from annotations.models.item import ItemStatus

FIELD_LABELS = {
    "question": _("Question"),
    "options": _("Options"),
    "answer": _("Answer"),
    "hint": _("Hint"),
    "status": _("Status"),
    "category": _("Category"),
    "l2_category": _("Subcategory"),
    "split": _("Split"),
    "task": _("Task"),
    "subtask": _("Subtask"),
    "scene": _("Scene"),
    "dataset": _("Dataset"),
    "modality": _("Modality"),
    "source": _("Source dataset"),
    "degradation_type": _("Degradation type"),
    "degradation_severity": _("Severity"),
    "limit": _("Limit"),
}

KIND_LABELS = {
    "limited_angle": _("Limited angle"),
    "sparse_view": _("Sparse view"),
    "low_dose": _("Low dose"),
    "bias_field_artifact": _("Bias field artefact"),
    "undersampling_artifact": _("Undersampling artefact"),
    "ghosting_artifact": _("Ghosting artefact"),
    "blood_cell_artifact": _("Blood cell artefact"),
    "dark_spots_artifact": _("Dark spots artefact"),
    "bubble_artifact": _("Bubble artefact"),
    "rotation_artifact": _("Rotation artefact"),
    "random_motion_artifact": _("Random motion artefact"),
    "adjust_brightness": _("Brightness change"),
    "exposure_artifact": _("Exposure artefact"),
    "reduce_contrast": _("Reduced contrast"),
    "gaussian_noise": _("Gaussian noise"),
    "downsample_artifact": _("Downsampling artefact"),
    "motion_blur": _("Motion blur"),
    "gaussian_blur": _("Gaussian blur"),
}


LEVEL_LABELS = {"clean": _("Clean"), "mild": _("Mild"), "severe": _("Severe")}

# Task ids of our own formats (Gastric-X, the task-aware prompts). Other benchmarks name their
# tasks in words ("Lesion Analysis"): those are shown as imported.
TASK_LABELS = {
    "vqa": _("Visual question answering"),
    "tnm_classification": _("TNM classification"),
    "classification": _("Classification"),
    "lesion_localization": _("Lesion localization"),
    "localization": _("Localization"),
    "report_generation": _("Report generation"),
    "retrieval": _("Retrieval"),
}

MODALITY_LABELS = {
    "CT": _("CT"),
    "MRI": _("MRI"),
    "X-ray": _("X-ray"),
    "Ultrasound": _("Ultrasound"),
    "Endoscopy": _("Endoscopy"),
    "Dermoscopy": _("Dermoscopy"),
    "Histopathology": _("Histopathology"),
}


def level_label(level: str) -> str:
    return LEVEL_LABELS.get(level, level)


def field_label(name: str) -> str:
    """A field's name for people; an unknown column keeps its name from the file."""
    return FIELD_LABELS.get(name, name)


def kind_label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind)


def task_label(task: str) -> str:
    return TASK_LABELS.get(task, task)


def modality_label(modality: str) -> str:
    """The modality in the reader's language, for any spelling the importer accepts."""
    canonical = normalise_modality(modality or "")
    return MODALITY_LABELS[canonical] if canonical else modality


def status_label(status: str) -> str:
    return ItemStatus(status).label if status in ItemStatus.values else status


def value_label(value: str, field: str) -> str:
    """A taxonomy value for people: ids of our own vocabularies by name, imported words as
    they are (`{{ value|value_label:"task" }}`)."""
    label = _VALUE_LABELS.get(field)
    return label(value) if label else value


# Why triage suspects an item, by reason code (annotations.scoring.triage).
TRIAGE_REASON_LABELS = {
    "model_consensus": _("Models disagree with the gold answer"),
    "answerable_without_image": _("Answerable without the image"),
    "split_leakage": _("Leakage between splits"),
    "duplicate_image": _("Duplicate image"),
    "duplicate_question": _("Duplicate question"),
    "empty_question": _("Empty question"),
    "answer_out_of_range": _("Answer is not an option"),
    "empty_option": _("Option read as empty"),
    "gt_mismatch": _("gt text ≠ answer option"),
    "duplicate_options": _("Duplicated options"),
    "degradation_modality_mismatch": _("Degradation not of this modality"),
    "reviewer_rejected": _("Rejected by a reviewer"),
    "reviewer_edited": _("Edited by a reviewer"),
    "slow_review": _("Unusually long review"),
}


# Import warnings (RowWarning codes): imported as they are, worth a curator's look.
IMPORT_WARNING_LABELS = {
    "metadata_removed": _("Metadata removed from the image (it may name the patient)"),
    "formula_like_cell": _(
        "Starts like a spreadsheet formula: kept as written; open the file in a spreadsheet "
        "only as text"
    ),
    "degradation_modality_mismatch": _("This degradation does not usually apply to the modality"),
}


def import_warning_label(code: str) -> str:
    return str(IMPORT_WARNING_LABELS.get(code, code))


# Why an import was refused (RowProblem codes of annotations.formats), in plain words. A problem
# without a code keeps the reader's own (English) reason.
IMPORT_PROBLEM_LABELS = {
    "unnamed_column": _("A column of the header has no name."),
    "duplicate_column": _("This column name appears twice in the header."),
    "missing_column": _("This required column is missing."),
    "missing_image_column": _("The file has neither an image column nor an image_path column."),
    "empty_file": _("The file is empty: it has no header row."),
    "no_items": _("The file holds no item."),
    "cell_count": _(
        "This row has another number of cells than the header (a tab too many or too few?)."
    ),
    "empty_question": _("The question is empty."),
    "bad_answer": _("The answer is not one of the item's options."),
    "bad_index": _("The index is not a whole number the database can hold."),
    "duplicate_index": _("Another row already uses this index."),
    "empty_image": _("The image cell is empty."),
    "image_not_readable": _(
        "The image cannot be read: the cell holds neither a valid base64 image nor the index "
        "of another row (is it broken or cut short?)."
    ),
    "image_reference": _("The row reuses the image of another row that has no usable image."),
    "cell_too_large": _("The cell is larger than the import limit."),
    "too_long": _("The value is longer than this field can hold."),
    "unreadable_text": _("The text cannot be read (not UTF-8, or a broken quote)."),
    "truncated": _("The file ends inside a quoted cell: it looks cut short."),
    "no_case_json": _("The case folder has no case.json."),
    "bad_case_json": _("case.json is not valid JSON, or does not hold a JSON object."),
    "missing_field": _("A required field is missing."),
    "bad_value": _("The value does not have the expected type or form."),
    "duplicate_case": _("Another case folder already uses this case id."),
    "bad_tnm": _("The TNM stage cannot be read."),
    "box_outside": _("The box lies outside its phase's volume, or on a phase the case lacks."),
    "bad_ct": _("The CT cannot be read (unknown or repeated phase, no series, a broken series)."),
    "bad_endoscopy": _("The endoscopy image cannot be used (several images, or unreadable)."),
    "label_set_too_large": _("The label set would hold more labels than the options A to Z."),
    "nul_character": _("The text holds a NUL character (\\u0000), which cannot be stored."),
    "not_an_object": _("This item is not a JSON object."),
    "not_json": _("The file is not a JSON array of items."),
    "not_zip": _("The file is not a readable zip archive."),
    "unsafe_zip_entry": _("This zip entry would be written outside its folder: refused."),
    "zip_too_large": _("The zip unpacks to more than the limit: refused."),
    "no_json": _("The zip holds no EndoBench JSON file, or more than one."),
    "bad_cell": _("The cell cannot be read."),
}
_ZIP_CODES = frozenset({"unsafe_zip_entry", "zip_too_large"})


def import_problem(problem: dict | str) -> dict[str, str]:
    """A stored import problem (a job's report) as `where`, `text` (in the reader's language)
    and `detail` (what the reader found, in the file's terms)."""
    if isinstance(problem, str):  # jobs stored before problems had codes
        return {"where": "", "text": problem, "detail": "", "code": ""}
    row, column, code = problem.get("row", 0), problem.get("column"), problem.get("code", "")
    if row:
        where = _("Row %(row)s") % {"row": row}
        if column:
            where = _("Row %(row)s, column “%(column)s”") % {"row": row, "column": column}
    elif column and code in _ZIP_CODES:
        where = _("Zip entry “%(name)s”") % {"name": column}
    elif column:
        where = _("Header, column “%(column)s”") % {"column": column}
    else:
        where = _("The file")
    label = IMPORT_PROBLEM_LABELS.get(code)
    reason = problem.get("reason", "")
    if label is None:
        return {"where": str(where), "text": reason, "detail": "", "code": code}
    return {"where": str(where), "text": str(label), "detail": reason, "code": code}


_VALUE_LABELS = {
    "task": task_label,
    "degradation_type": kind_label,
    "degradation_severity": level_label,
    "modality": modality_label,
    "status": status_label,
}
