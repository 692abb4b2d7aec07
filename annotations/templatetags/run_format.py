"""Number formatting for run and rating pages (percentages of accuracies)."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format

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
