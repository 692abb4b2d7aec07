"""Number formatting for run and rating pages (percentages of accuracies)."""

from __future__ import annotations

from django import template
from django.utils.formats import number_format

register = template.Library()


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """0.734 → "73.4%" in the current locale; "—" for a missing value."""
    if value is None or value == "":
        return "—"
    return f"{number_format(float(value) * 100, decimal_pos=digits)}%"


@register.filter
def percent_width(value: float | None) -> str:
    """A CSS width for a bar: 0.734 → "73.40" (always a dot, whatever the locale)."""
    if value is None or value == "":
        return "0"
    return f"{max(0.0, min(1.0, float(value))) * 100:.2f}"
