"""Forms: the input of the pairs, triage and human-baseline pages, parsed before a view calls a
service. (The forms of the pages other branches were rewriting still sit in their views.)"""

from __future__ import annotations

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy

from annotations.formats.taxonomy import CT_KINDS, HISTOPATHOLOGY_KINDS, MRI_KINDS
from annotations.imaging.degrade import KINDS, SEVERITIES
from annotations.labels import kind_label
from annotations.models import SeverityJudgement
from annotations.scoring.triage import ALL_CODES
from annotations.services.pair_review import LEFT, RIGHT

# --- pairs ----------------------------------------------------------------------------------

_ONLY_FOR = dict.fromkeys(CT_KINDS, "CT") | dict.fromkeys(MRI_KINDS, "MRI")
_ONLY_FOR |= dict.fromkeys(HISTOPATHOLOGY_KINDS, gettext_lazy("Histopathology"))


def _kind_label(kind: str) -> str:
    only = _ONLY_FOR.get(kind)
    return format_lazy("{} · {}", kind_label(kind), only) if only else kind_label(kind)


class DegradeForm(forms.Form):
    kinds = forms.MultipleChoiceField(
        label=gettext_lazy("Degradation kinds"),
        choices=[(kind, _kind_label(kind)) for kind in KINDS],
        widget=forms.CheckboxSelectMultiple,
        initial=list(KINDS),
    )
    severities = forms.MultipleChoiceField(
        label=gettext_lazy("Severities"),
        choices=[("mild", gettext_lazy("Mild")), ("severe", gettext_lazy("Severe"))],
        widget=forms.CheckboxSelectMultiple,
        initial=list(SEVERITIES),
    )
    seed = forms.IntegerField(label=gettext_lazy("Seed"), min_value=0, max_value=2**31, initial=0)


class PairReviewForm(forms.Form):
    version = forms.IntegerField(min_value=1)
    answerable = forms.TypedChoiceField(
        choices=[("yes", gettext_lazy("Yes")), ("no", gettext_lazy("No"))],
        coerce=lambda value: value == "yes",
        error_messages={"required": gettext_lazy("Is the question still answerable?")},
    )
    realism = forms.TypedChoiceField(
        choices=[(str(n), str(n)) for n in range(1, 6)],
        coerce=int,
        error_messages={"required": gettext_lazy("Score the realism from 1 to 5.")},
    )
    severity_judgement = forms.ChoiceField(
        choices=SeverityJudgement.choices,
        error_messages={"required": gettext_lazy("Is the severity right?")},
    )
    identified_side = forms.ChoiceField(choices=[(LEFT, LEFT), (RIGHT, RIGHT)], required=False)
    comment = forms.CharField(required=False, max_length=5000)
    seconds_spent = forms.FloatField(required=False)


# --- triage ---------------------------------------------------------------------------------


class TriageFilter(forms.Form):
    reason = forms.ChoiceField(required=False, choices=[("", ""), *((c, c) for c in ALL_CODES)])
    sort = forms.ChoiceField(required=False, choices=[("score", "score"), ("index", "index")])
    page = forms.IntegerField(required=False, min_value=1)


class TriageSwitchForm(forms.Form):
    suspects_first = forms.BooleanField(required=False)


# --- human baseline -------------------------------------------------------------------------


class BaselineOpenForm(forms.Form):
    clinician = forms.CharField()
    limit = forms.IntegerField(required=False, min_value=1)
    category = forms.CharField(required=False)
    split = forms.CharField(required=False)


class BaselineAnswerForm(forms.Form):
    item = forms.IntegerField()
    letter = forms.CharField(max_length=1)
    seconds_spent = forms.FloatField(required=False, min_value=0)
