"""Forms: every page's input, parsed and checked before a view calls a service."""

from __future__ import annotations

import json
import time

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy

from annotations.formats.taxonomy import CT_KINDS, HISTOPATHOLOGY_KINDS, MRI_KINDS
from annotations.imaging.degrade import KINDS, SEVERITIES
from annotations.labels import field_label, kind_label
from annotations.models import (
    AdjudicationChoice,
    Benchmark,
    EndpointKind,
    GradingTask,
    Item,
    ItemKind,
    ItemStatus,
    ModelEndpoint,
    Preference,
    Run,
    RunStatus,
    SeverityJudgement,
)
from annotations.scoring.triage import ALL_CODES
from annotations.selectors.runs import SUMMARY_FIELDS
from annotations.services.grading import SIDES
from annotations.services.import_jobs import StoredUpload, file_type_problem
from annotations.services.item_content import label_set
from annotations.services.pair_review import LEFT, RIGHT
from annotations.services.runs import MAX_CONCURRENCY
from annotations.uploads import too_large_message

# --- imports --------------------------------------------------------------------------------


FAMILY_CHOICES = [
    ("vlmeval", gettext_lazy("VLMEvalKit multiple-choice TSV")),
    ("endobench", gettext_lazy("EndoBench: a TSV, or a zip of the JSON and its images")),
    ("medqdeg", gettext_lazy("MedQ-DEG TSV (degraded and clean pairs)")),
    ("gastricx", gettext_lazy("Gastric-X: a zip of case folders (CT, endoscopy, case.json)")),
]


class ImportForm(forms.Form):
    name = forms.SlugField(label=gettext_lazy("Benchmark name"), max_length=100)
    family = forms.ChoiceField(label=gettext_lazy("Format"), choices=FAMILY_CHOICES)
    file = forms.FileField(label=gettext_lazy("File"), required=False)

    def __init__(self, *args, refused: bool = False, kept: StoredUpload | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.refused, self.kept = refused, kept

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Benchmark.objects.filter(name=name).exists():
            raise forms.ValidationError(gettext_lazy("A benchmark with this name already exists."))
        return name

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if self.refused or (upload is not None and upload.size > settings.MAX_UPLOAD_BYTES):
            raise forms.ValidationError(too_large_message())
        if upload is None and self.kept is None:
            raise forms.ValidationError(gettext_lazy("Choose a file to import."))
        return upload

    def clean(self):
        data = super().clean()
        family, upload = data.get("family"), data.get("file")
        file_name = upload.name if upload is not None else self.kept.name if self.kept else None
        if family and file_name and "file" not in self.errors:
            problem = file_type_problem(family, file_name)
            if problem:
                self.add_error("file", problem)
        return data

    def full_clean(self) -> None:
        super().full_clean()
        if self.refused and self.is_bound:
            # The handler stopped reading at the limit, so the file never arrived.
            self.errors["file"] = self.error_class([too_large_message()])


# --- review and adjudication ----------------------------------------------------------------


BOX_FIELDS = ("x0", "y0", "z0", "x1", "y1", "z1")


class KindFieldsForm(forms.Form):
    """A decision form whose fields follow the item's kind, as its page's edit panel does.

    Only a multiple-choice page sends an option `answer` (a letter); a classification page
    sends its `label`, a report page its `reference`, a box page its voxel (3D) or pixel (2D)
    numbers. Fields
    of other kinds are not read, so what one kind's page sends is never judged by another's
    rules (a TNM label is not a letter). The service checks the content itself.
    """

    def __init__(self, *args, item: Item, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = item.kind
        if item.kind == ItemKind.MCQ:
            self.fields["question"] = forms.CharField(required=False, strip=False)
            self.fields["answer"] = forms.CharField(required=False, max_length=1)
        elif item.kind == ItemKind.LABEL:
            labels = label_set(item)
            self.fields["label"] = forms.ChoiceField(
                required=False,
                choices=[("", "")] + [(label, label) for label in labels],
                error_messages={
                    "invalid_choice": format_lazy(
                        gettext_lazy("Choose a label of the set ({labels})."),
                        labels=", ".join(labels),
                    )
                },
            )
        elif item.kind in (ItemKind.OPEN, ItemKind.RETRIEVAL):
            self.fields["reference"] = forms.CharField(required=False, strip=False)
        elif item.kind == ItemKind.BOX:
            for name in BOX_FIELDS:
                self.fields[name] = forms.IntegerField(required=False, min_value=0)

    def first_error(self, default: str) -> str:
        """What was refused: `default` when the decision itself is missing, else the first
        field's own message (a label outside the set names the set)."""
        if {"verdict", "choice", "version"} & set(self.errors):
            return default
        return str(next(iter(self.errors.values()))[0])


class ReviewForm(KindFieldsForm):
    verdict = forms.ChoiceField(
        choices=[("accept", "accept"), ("edit", "edit"), ("reject", "reject")]
    )
    version = forms.IntegerField(min_value=1)
    reason = forms.CharField(required=False)
    comment = forms.CharField(required=False)
    seconds_spent = forms.FloatField(required=False, min_value=0)


class AdjudicateForm(KindFieldsForm):
    choice = forms.ChoiceField(choices=AdjudicationChoice.choices)
    version = forms.IntegerField(min_value=1)
    reject = forms.BooleanField(required=False)
    comment = forms.CharField(required=False)


class AssignForm(forms.Form):
    reviewers = forms.MultipleChoiceField(
        choices=(), widget=forms.CheckboxSelectMultiple, label=gettext_lazy("Reviewers")
    )
    per_item = forms.IntegerField(min_value=1, max_value=3, initial=2)
    status = forms.ChoiceField(
        required=False,
        choices=[("", gettext_lazy("Pending and in review")), *ItemStatus.choices[:2]],
    )
    category = forms.CharField(required=False)
    split = forms.CharField(required=False)

    def __init__(self, *args, users=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviewers"].choices = [(u.username, u.username) for u in users]


# --- item edit ------------------------------------------------------------------------------


class ItemEditForm(forms.Form):
    version = forms.IntegerField(min_value=1)
    question = forms.CharField(required=False, strip=False)
    hint = forms.CharField(required=False, strip=False)
    answer = forms.CharField(required=False, max_length=1)
    note = forms.CharField(required=False, max_length=500, label=gettext_lazy("Note"))


# --- runs -----------------------------------------------------------------------------------


BASELINE_LABELS = {
    "random": gettext_lazy("Baseline: random option (seeded)"),
    "first": gettext_lazy("Baseline: always the first option"),
    "frequent": gettext_lazy("Baseline: most frequent answer per category"),
}


class RunCreateForm(forms.Form):
    source = forms.ChoiceField(label=gettext_lazy("Model"))
    benchmark = forms.ModelChoiceField(
        queryset=Benchmark.objects.order_by("name"),
        to_field_name="name",
        label=gettext_lazy("Benchmark"),
    )
    status = forms.ChoiceField(required=False, label=gettext_lazy("Item status"))
    field = forms.ChoiceField(required=False, label=gettext_lazy("Field"))
    value = forms.CharField(required=False, max_length=200, label=gettext_lazy("Value"))
    limit = forms.IntegerField(required=False, min_value=1, label=gettext_lazy("At most N items"))
    concurrency = forms.IntegerField(
        min_value=1,
        max_value=MAX_CONCURRENCY,
        initial=4,
        label=gettext_lazy("Requests in flight per chunk"),
        widget=forms.NumberInput(
            attrs={
                "title": gettext_lazy(
                    "A run is cut into chunks that the workers share; each chunk being "
                    "answered keeps this many requests in flight."
                )
            }
        ),
    )
    with_image = forms.BooleanField(
        required=False, initial=True, label=gettext_lazy("Send the image")
    )
    lenient = forms.BooleanField(
        required=False,
        label=gettext_lazy("Lenient score too"),
        widget=forms.CheckboxInput(
            attrs={
                "title": gettext_lazy(
                    "Beside VLMEvalKit's score, a second one that also reads what VLMEvalKit "
                    "does not (答案是B, a lower-case letter...). It never replaces VLMEvalKit's."
                )
            }
        ),
    )
    judge = forms.ChoiceField(required=False, label=gettext_lazy("LLM judge for unmatched answers"))
    label = forms.CharField(required=False, max_length=200, label=gettext_lazy("Label"))
    name = forms.CharField(required=False, max_length=100, label=gettext_lazy("Endpoint name"))
    base_url = forms.URLField(required=False, assume_scheme="http", label=gettext_lazy("Base URL"))
    model = forms.CharField(required=False, max_length=200, label=gettext_lazy("Model name"))
    api_key_env = forms.RegexField(
        required=False,
        regex=r"^[A-Za-z_][A-Za-z0-9_]*$",
        max_length=100,
        label=gettext_lazy("API key environment variable"),
        help_text=format_lazy(
            gettext_lazy("Its name starts with {prefix}; or type the key below instead."),
            prefix=settings.ENDPOINT_KEY_ENV_PREFIX,
        ),
    )
    # Typed once, stored encrypted, never shown again (the field is never filled back in).
    api_key = forms.CharField(
        required=False,
        max_length=500,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        label=gettext_lazy("API key (stored encrypted)"),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        endpoints = ModelEndpoint.objects.filter(kind=EndpointKind.OPENAI).order_by("name")
        self.fields["source"].choices = [
            *((f"baseline:{key}", label) for key, label in BASELINE_LABELS.items()),
            *((f"endpoint:{e.pk}", f"{e.name} · {e.model}") for e in endpoints),
            ("new", gettext_lazy("A new OpenAI-compatible endpoint…")),
        ]
        self.fields["judge"].choices = [("", gettext_lazy("No judge"))] + [
            (str(e.pk), f"{e.name} · {e.model}") for e in endpoints
        ]
        self.fields["status"].choices = [
            ("", gettext_lazy("Any status")),
            ("curated", gettext_lazy("Curated (agreed or adjudicated)")),
            *ItemStatus.choices,
        ]
        self.fields["field"].choices = [("", gettext_lazy("No field filter"))] + [
            (name, field_label(name)) for name in SUMMARY_FIELDS
        ]

    def clean(self) -> dict:
        data = super().clean()
        if data.get("source") == "new":
            for name in ("name", "base_url", "model"):
                if not data.get(name):
                    self.add_error(name, gettext_lazy("Needed for a new endpoint."))
        return data

    def filters(self) -> dict:
        data = self.cleaned_data
        filters: dict = {}
        if data.get("status"):
            filters["status"] = [data["status"]]
        if data.get("field") and data.get("value"):
            filters[data["field"]] = [data["value"]]
        if data.get("limit"):
            filters["limit"] = data["limit"]
        return filters


# --- grading --------------------------------------------------------------------------------


class SessionCreateForm(forms.Form):
    task = forms.ChoiceField(
        choices=GradingTask.choices, required=False, label=gettext_lazy("Grade")
    )
    run_a = forms.ModelChoiceField(queryset=Run.objects.none(), label=gettext_lazy("Run A"))
    run_b = forms.ModelChoiceField(
        queryset=Run.objects.none(),
        label=gettext_lazy("Run B"),
        required=False,
        empty_label=gettext_lazy("The reference reports (reports only)"),
    )
    graders = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Graders"),
        help_text=gettext_lazy("The clinicians who grade this session."),
        error_messages={"required": gettext_lazy("Pick at least one grader.")},
    )

    def __init__(self, *args, graders=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if graders is not None:
            self.fields["graders"].queryset = graders
            self.fields["graders"].label_from_instance = lambda user: user.get_username()
        runs = Run.objects.exclude(status=RunStatus.QUEUED).select_related("benchmark")
        for name in ("run_a", "run_b"):
            self.fields[name].queryset = runs.order_by("-pk")
            self.fields[name].label_from_instance = lambda run: (
                f"#{run.pk} {run.label} · {run.benchmark.name}"
            )


class GradeForm(forms.Form):
    item = forms.IntegerField(widget=forms.HiddenInput)
    shown_at = forms.FloatField(widget=forms.HiddenInput, required=False)
    preference = forms.ChoiceField(choices=Preference.choices)

    def __init__(self, *args, scales: dict[str, tuple[int, ...]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.scales = scales
        for side in SIDES:
            for criterion, scores in scales.items():
                self.fields[f"{side}_{criterion}"] = forms.TypedChoiceField(
                    choices=[("", "")] + [(s, s) for s in scores],
                    coerce=int,
                    required=False,
                    empty_value=None,
                )

    def rubric(self) -> dict:
        return {
            side: {
                criterion: self.cleaned_data[f"{side}_{criterion}"]
                for criterion in self.scales
                if self.cleaned_data.get(f"{side}_{criterion}") is not None
            }
            for side in SIDES
        }

    def seconds_spent(self) -> float | None:
        shown_at = self.cleaned_data.get("shown_at")
        if not shown_at:
            return None
        return max(0.0, min(time.time() - shown_at, 3600.0))


# --- releases -------------------------------------------------------------------------------


FILTER_LABELS = {
    "split": gettext_lazy("Split"),
    "category": gettext_lazy("Category"),
    "task": gettext_lazy("Task"),
    "scene": gettext_lazy("Scene"),
    "modality": gettext_lazy("Modality"),
    "dataset": gettext_lazy("Source dataset"),
    "degradation_type": gettext_lazy("Degradation type"),
}


class ReleaseForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Dataset name"), max_length=100)
    version = forms.CharField(label=gettext_lazy("Version"), max_length=40, initial="1.0")
    include_all = forms.BooleanField(
        label=gettext_lazy("Include every item, not only curated ones (agreed or adjudicated)"),
        required=False,
    )
    withhold_split = forms.ChoiceField(
        label=gettext_lazy("Withhold the answers of split"), required=False
    )

    def __init__(self, *args, choices: dict, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        splits = [value for value, _count in choices.get("split", [])]
        self.fields["withhold_split"].choices = [("", gettext_lazy("none"))] + [
            (s, s) for s in splits
        ]
        self.filter_names = list(choices)
        for name, values in choices.items():
            self.fields[f"filter_{name}"] = forms.MultipleChoiceField(
                label=FILTER_LABELS.get(name, name),
                required=False,
                choices=[(value, f"{value} ({count})") for value, count in values],
                widget=forms.CheckboxSelectMultiple,
            )

    def filter_fields(self):
        return [self[f"filter_{name}"] for name in self.filter_names]

    def filters(self) -> dict[str, list[str]]:
        return {name: self.cleaned_data[f"filter_{name}"] for name in self.filter_names}

    def selection(self) -> dict:
        data = self.cleaned_data
        return {
            "include_all": data["include_all"],
            "filters": self.filters(),
            "withhold_split": data["withhold_split"],
        }

    def signature(self) -> str:
        """What the preview showed: a confirmation counts only for the same selection."""
        return json.dumps(self.selection(), sort_keys=True)


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


# --- pools ----------------------------------------------------------------------------------


class DrawForm(forms.Form):
    """A draw from a pool's hub: the same choices as `manage.py draw_benchmark`."""

    name = forms.SlugField(label=gettext_lazy("New benchmark's name"), max_length=100)
    fields = forms.MultipleChoiceField(
        label=gettext_lazy("Strata: one per value of"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=gettext_lazy("Two fields make a stratum of each combination (scene × task)."),
    )
    per_stratum = forms.IntegerField(
        label=gettext_lazy("Items per stratum"), min_value=1, required=False
    )
    quota_file = forms.FileField(
        label=gettext_lazy("Or a quota file (CSV: the fields, then quota)"), required=False
    )
    seed = forms.IntegerField(label=gettext_lazy("Seed"), min_value=0, max_value=2**62)
    balance_answers = forms.BooleanField(
        label=gettext_lazy("Balance the answer positions"), required=False, initial=True
    )
    exclude_near_duplicates = forms.BooleanField(
        label=gettext_lazy("Also leave out near-duplicate questions on a drawn image"),
        required=False,
        initial=True,
    )
    exclude_images_of = forms.MultipleChoiceField(
        label=gettext_lazy("Leave out the images of"), required=False
    )

    MAX_QUOTA_FILE = 1024**2

    def __init__(self, *args, fields: list[str], others: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["fields"].choices = [(name, field_label(name)) for name in fields]
        self.fields["exclude_images_of"].choices = [(name, name) for name in others]
        self.fields["exclude_images_of"].widget.attrs["size"] = min(max(len(others), 2), 6)

    @classmethod
    def for_pool(cls, pool_summary, data=None, files=None) -> DrawForm:
        """The draw form of a pool (a `selectors.draws.PoolSummary`): its fields and the other
        benchmarks whose images may be left out."""
        return cls(
            data,
            files if data is not None else None,
            fields=pool_summary.fields,
            others=[other.name for other in pool_summary.others],
            prefix="draw",
        )

    def clean(self):
        data = super().clean()
        upload = data.get("quota_file")
        data["quota_csv"] = ""
        if upload:
            if upload.size > self.MAX_QUOTA_FILE:
                self.add_error("quota_file", gettext_lazy("The quota file is over 1 MB."))
            else:
                try:
                    data["quota_csv"] = upload.read().decode("utf-8-sig")
                except UnicodeDecodeError:
                    self.add_error("quota_file", gettext_lazy("The quota file is not UTF-8 text."))
        elif not data.get("fields") or not data.get("per_stratum"):
            raise forms.ValidationError(
                gettext_lazy(
                    "Choose the strata's fields and the items per stratum, or a quota file."
                )
            )
        return data
