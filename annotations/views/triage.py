"""The triage page of a benchmark: suspects by score or reason, with their evidence, and the
curator's switches (recompute, "review the suspects first")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from annotations.access import ADJUDICATOR, CURATOR, role_required
from annotations.labels import TRIAGE_REASON_LABELS
from annotations.models import Benchmark
from annotations.scoring.triage import ALL_CODES, GROUPS
from annotations.selectors import triage as selectors
from annotations.selectors import visibility
from annotations.services.triage import triage_schedule, triage_setting_update

PAGE = "triage/page.html"
RESULTS_UPDATE = "triage/_results_update.html"
PER_PAGE = 20

GROUP_LABELS = {
    "models": gettext_lazy("Models"),
    "duplicates": gettext_lazy("Duplicates"),
    "broken": gettext_lazy("Broken items"),
    "reviews": gettext_lazy("Reviews"),
}


class TriageFilter(forms.Form):
    reason = forms.ChoiceField(required=False, choices=[("", ""), *((c, c) for c in ALL_CODES)])
    sort = forms.ChoiceField(required=False, choices=[("score", "score"), ("index", "index")])
    page = forms.IntegerField(required=False, min_value=1)


# The clinician's sentence for each reason, filled from the numbers in its evidence (shaped first
# by _SHAPES where the evidence is not flat), and a second sentence where the evidence asks for it.
REASON_TEXTS = {
    "model_consensus": gettext_lazy(
        "%(agree)s of %(runs)s models answer %(consensus)s, not the gold %(gold)s. "
        "Weighted by each model's accuracy on the other items, the gold answer is wrong "
        "with probability %(p)s%%."
    ),
    "answerable_without_image": gettext_lazy(
        "Every run made without the image answers it correctly."
    ),
    "split_leakage": gettext_lazy(
        "The same frame appears in another split: a test item may have been seen."
    ),
    "duplicate_image": gettext_lazy(
        "A near-identical image (re-encoded or resized) is stored for another item."
    ),
    "duplicate_question": gettext_lazy(
        "Another item asks the same question with the same options."
    ),
    "empty_question": gettext_lazy("The question is empty or reads as missing."),
    "answer_out_of_range": gettext_lazy("The answer %(answer)s is not one of the options."),
    "empty_option": gettext_lazy(
        "An option is spelled like a missing value (%(texts)s): pandas and VLMEvalKit drop it."
    ),
    "gt_mismatch": gettext_lazy(
        "The gt text “%(gt)s” is not the answer's option “%(answer_text)s”."
    ),
    "duplicate_options": gettext_lazy("Several options have the same text: %(letters)s."),
    "degradation_modality_mismatch": gettext_lazy(
        "The degradation “%(degradation_type)s” does not apply to %(modality)s images."
    ),
    "reviewer_rejected": gettext_lazy(
        "%(count)s of %(reviews)s reviewers did this; the others did not."
    ),
    "reviewer_edited": gettext_lazy(
        "%(count)s of %(reviews)s reviewers did this; the others did not."
    ),
    "slow_review": gettext_lazy("A review took %(seconds)s s; the median is %(median)s s."),
}

_SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "model_consensus": lambda ev: {**ev, "p": round(100 * ev.get("probability", 0))},
    "answer_out_of_range": lambda ev: {"answer": ev.get("answer") or "—"},
    "empty_option": lambda ev: {
        "texts": ", ".join(f"{o['letter']} = “{o['text']}”" for o in ev.get("options", []))
    },
    "duplicate_options": lambda ev: {
        "letters": "; ".join(" = ".join(group) for group in ev.get("letters", []))
    },
}


def _task_sentence(ev: dict[str, Any]) -> str:
    task = ev.get("task") or {}
    if not task.get("flagged"):
        return ""
    return _(
        "Its task “%(task)s” is answered %(acc)s%% of the time without images "
        "(chance %(chance)s%%): the task may not test vision."
    ) % {
        "task": task.get("task") or "—",
        "acc": round(100 * task["accuracy"]),
        "chance": round(100 * task["chance"]),
    }


def _option_sentence(ev: dict[str, Any]) -> str:
    if not ev.get("matches"):
        return ""
    return _("It is the text of option %(letter)s.") % {"letter": ev["matches"][0]}


_MORE = {"answerable_without_image": _task_sentence, "gt_mismatch": _option_sentence}


def _explain(code: str, ev: dict[str, Any]) -> str:
    """The clinician's sentence for one reason, translated; '' for an unknown code."""
    if code not in REASON_TEXTS:
        return ""
    text = str(REASON_TEXTS[code]) % _SHAPES.get(code, dict)(ev)
    more = _MORE[code](ev) if code in _MORE else ""
    return f"{text} {more}" if more else text


def _decorate(suspicion) -> None:
    """Attach labels, sentences and the duplicates' thumbnails to the stored reasons."""
    own = {ii.image.sha256 for ii in suspicion.item.item_images.all()}
    suspicion.consensus = ""
    for reason in suspicion.reasons:
        if reason["code"] == "model_consensus":
            suspicion.consensus = (reason.get("evidence") or {}).get("consensus", "")
        for other in (reason.get("evidence") or {}).get("others", ()):
            theirs = [sha for sha in other.get("images", ()) if sha not in own]
            other["thumb"] = theirs[0] if theirs else ""
        reason["label"] = TRIAGE_REASON_LABELS.get(reason["code"], reason["code"])
        try:
            reason["text"] = _explain(reason["code"], reason.get("evidence") or {})
        except (KeyError, TypeError, ValueError):  # evidence of an older format
            reason["text"] = reason.get("detail", "")
        reason["percent"] = round(100 * reason.get("weight", 0))
    suspicion.percent = round(100 * suspicion.score)


def _reason_chips(summary: dict, selected: str) -> list[dict]:
    counts = summary.get("by_code", {})
    largest = max(counts.values(), default=0) or 1
    return [
        {
            "group": GROUP_LABELS[group],
            "code": code,
            "label": TRIAGE_REASON_LABELS[code],
            "count": counts.get(code, 0),
            "width": round(100 * counts.get(code, 0) / largest),
            "selected": code == selected,
        }
        for group, codes in GROUPS.items()
        for code in codes
    ]


@require_GET
@role_required(CURATOR, ADJUDICATOR)
def triage_index(request: HttpRequest) -> HttpResponse:
    return render(request, "triage/index.html", {"rows": selectors.triage_overview(request.user)})


@require_GET
@role_required(CURATOR, ADJUDICATOR)
def triage_page(request: HttpRequest, name: str) -> HttpResponse:
    form = TriageFilter(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    # The evidence names the gold answer and the models' hits.
    visibility.check_gold_visible(request.user, benchmark.pk)
    code, sort = filters.get("reason") or "", filters.get("sort") or "score"
    suspects = selectors.suspicion_list(benchmark, code=code, sort=sort, viewer=request.user)
    page = Paginator(suspects, PER_PAGE).get_page(filters.get("page"))
    visibility.redact_review_reasons(page)
    for suspicion in page:
        _decorate(suspicion)
    setting = selectors.triage_setting(benchmark)
    context = {
        "benchmark": benchmark,
        "setting": setting,
        "summary": setting.summary or {},
        "chips": _reason_chips(setting.summary or {}, code),
        "page": page,
        "reason": code,
        "reason_label": TRIAGE_REASON_LABELS.get(code, ""),
        "sort": sort,
        "job": selectors.triage_job_active(benchmark),
    }
    # A filter change swaps the results; the sidebar's reasons follow out of band.
    template = RESULTS_UPDATE if request.htmx and request.htmx.target == "results" else PAGE
    return render(request, template, context)


@require_POST
@role_required(CURATOR)
def triage_recompute(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, name=name)
    triage_schedule(benchmark_id=benchmark.pk, user=request.user)
    messages.success(request, _("Triage is being recomputed; this page updates when it is done."))
    return redirect("triage", name=benchmark.name)


class SwitchForm(forms.Form):
    suspects_first = forms.BooleanField(required=False)


@require_POST
@role_required(CURATOR)
def triage_suspects_first(request: HttpRequest, name: str) -> HttpResponse:
    form = SwitchForm(request.POST)
    form.is_valid()  # a missing checkbox is False: the form cannot be invalid
    benchmark = get_object_or_404(Benchmark, name=name)
    setting = triage_setting_update(
        benchmark=benchmark, suspects_first=form.cleaned_data["suspects_first"]
    )
    if request.htmx:
        return render(request, f"{PAGE}#switch", {"benchmark": benchmark, "setting": setting})
    return redirect("triage", name=benchmark.name)
