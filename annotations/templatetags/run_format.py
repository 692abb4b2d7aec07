"""Number formatting for run and rating pages (percentages of accuracies)."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _

from annotations.scoring.accuracy import printed_as_vlmeval

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """0.734 → "73.4%" in the current locale; "—" for a missing value."""
    if value is None or value == "":
        return "—"
    # number_format cuts extra digits off (1/6 would read 16.6%): round first.
    return f"{number_format(round(float(value) * 100, digits), decimal_pos=digits)}%"


@register.filter
def percent_width(value: float | None) -> str:
    """A CSS width for a bar: 0.734 → "73.40" (always a dot, whatever the locale)."""
    if value is None or value == "":
        return "0"
    return f"{max(0.0, min(1.0, float(value))) * 100:.2f}"


@register.filter
def vlmeval_printed(value: float | None) -> str:
    """A VLMEvalKit table value as its log prints it (6 significant digits); "nan" for a cell
    without items, as VLMEvalKit prints it."""
    if value is None or value == "":
        return "nan"
    if isinstance(value, str):  # the row's split
        return value
    return printed_as_vlmeval(float(value))


TASK_LABELS = {
    "vqa": _("Visual question answering"),
    "classification": _("Disease classification"),
    "report_generation": _("Report generation"),
    "localization": _("Lesion localization"),
    "retrieval": _("Cross-modal retrieval"),
}
METRIC_LABELS = {
    "accuracy": _("Accuracy"),
    "macro_f1": _("Macro-F1"),
    "macro_f1_no_support": _("Macro-F1, labels seen"),
    "rouge_l": "ROUGE-L",
    "bleu4": "BLEU-4",
    "mean_iou": _("Mean IoU"),
    "ap50": _("VOC AP@0.5 per item"),
    "coco_ap50": "COCO AP50",
    "coco_ap": "COCO AP@[.5:.95]",
    "slice_iou": _("Mean IoU per slice"),
    "recall_at_1": "R@1",
    "recall_at_5": "R@5",
    "recall_at_10": "R@10",
    "median_rank": _("Median rank"),
    "ece": "ECE",
    "brier": "Brier",
    "mean_confidence": _("Mean confidence"),
    "gap": _("Over-confidence"),
}
PART_LABELS = {
    "2d": _("2D (endoscopy image)"),
    "3d": _("3D (CT volume)"),
    "2d per slice": _("2D, per CT slice"),
    "report_to_case": _("Report → case"),
    "case_to_report": _("Case → report"),
    "diagnostic": _("Diagnostic report"),
    "ct": _("CT report"),
    "endoscopy": _("Endoscopy report"),
}


@register.filter
def task_label(task: str) -> str:
    return str(TASK_LABELS.get(task, task))


@register.filter
def metric_label(name: str) -> str:
    return str(METRIC_LABELS.get(name, name))


@register.filter
def part_label(name: str) -> str:
    return str(PART_LABELS.get(name, name))


@register.filter
def metric_value(value: float | None, name: str = "") -> str:
    """A task metric as papers print it: 0.734 -> "0.734"; a median rank as a rank; "—" for an
    undefined one."""
    if value is None or value == "":
        return "—"
    # number_format cuts extra digits off (0.2156 would read 0.215): round first.
    if name == "median_rank":
        return number_format(round(float(value), 1), 1)
    return number_format(round(float(value), 3), 3)


@register.filter
def signed_points(value: float | None) -> str:
    """A change of a proportion in percentage points, signed: -0.125 -> "−12.5 pp"."""
    if value is None or value == "":
        return "—"
    points = round(float(value) * 100, 1)
    sign = "−" if points < 0 else "+"
    return f"{sign}{number_format(abs(points), decimal_pos=1)} pp"


@register.filter
def points(value: float | None, digits: int = 0) -> str:
    """A threshold on a change of a proportion, in percentage points: 0.10 -> "10 pp"."""
    if value is None or value == "":
        return "—"
    return f"{number_format(round(float(value) * 100, digits), decimal_pos=digits)} pp"


@register.filter
def drop_points(value: float | None) -> str:
    """A drop of accuracy shown as the change it is: a drop of 0.405 -> "−40.5 pp"."""
    if value is None or value == "":
        return "—"
    return signed_points(-float(value))


@register.filter
def signed_metric(value: float | None) -> str:
    """A change of a metric, signed, three decimals: -0.1284 -> "−0.128"."""
    if value is None or value == "":
        return "—"
    rounded = round(float(value), 3)
    sign = "−" if rounded < 0 else "+"
    return f"{sign}{number_format(abs(rounded), 3)}"


@register.filter
def p_value(value: float | None) -> str:
    """A p-value as papers print it: "<0.001" below a thousandth, else three decimals."""
    if value is None or value == "":
        return "—"
    if float(value) < 0.001:
        return "<" + number_format(0.001, 3)
    return number_format(float(value), 3)
