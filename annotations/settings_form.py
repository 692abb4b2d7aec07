"""The form of a benchmark's settings page: each setting as the JSON the curator edits, the
reason, and the settings version the page showed (a stale one is a conflict in the service)."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy

SETTING_SHAPES = {"taxonomy": dict, "option_letters": list, "label_sets": dict}


def as_text(value: Any) -> str:
    # A list of letters reads best on one line; label sets and taxonomy one entry a line.
    return json.dumps(value, ensure_ascii=False, indent=None if isinstance(value, list) else 2)


class BenchmarkSettingsForm(forms.Form):
    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    taxonomy = forms.CharField(
        label=gettext_lazy("Taxonomy (field → allowed values)"),
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
    )
    option_letters = forms.CharField(
        label=gettext_lazy("Option letters"),
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
    )
    label_sets = forms.CharField(
        label=gettext_lazy("Label sets (field → labels, in letter order)"),
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
    )
    reason = forms.CharField(
        label=gettext_lazy("Why this change"),
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    @classmethod
    def for_benchmark(cls, benchmark) -> BenchmarkSettingsForm:
        initial = {name: as_text(getattr(benchmark, name)) for name in SETTING_SHAPES}
        return cls(initial={**initial, "version": benchmark.settings_version})

    def _clean_json(self, name: str) -> Any:
        try:
            value = json.loads(self.cleaned_data[name])
        except json.JSONDecodeError as error:
            raise forms.ValidationError(
                gettext_lazy("Not valid JSON (line %(line)d, column %(column)d).")
                % {"line": error.lineno, "column": error.colno}
            ) from error
        if not isinstance(value, SETTING_SHAPES[name]):
            shape = (
                gettext_lazy("an object")
                if SETTING_SHAPES[name] is dict
                else gettext_lazy("a list")
            )
            raise forms.ValidationError(gettext_lazy("Expected %(shape)s.") % {"shape": shape})
        return value

    def clean_taxonomy(self) -> Any:
        return self._clean_json("taxonomy")

    def clean_option_letters(self) -> Any:
        return self._clean_json("option_letters")

    def clean_label_sets(self) -> Any:
        return self._clean_json("label_sets")

    def changes(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in SETTING_SHAPES}
