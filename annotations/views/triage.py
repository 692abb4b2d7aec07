"""The triage page of a benchmark: suspects by score or reason, with their evidence, and the
curator's switches (recompute, "review the suspects first")."""

from __future__ import annotations

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


def _explain(code: str, ev: dict[str, Any]) -> str:
    """The clinician's sentence for one reason, translated, from the numbers in its evidence."""
    if code == "model_consensus":
        return _(
            "%(agree)s of %(runs)s models answer %(consensus)s, not the gold %(gold)s. "
            "Weighted by each model's accuracy on the other items, the gold answer is wrong "
            "with probability %(p)s%%."
        ) % {**ev, "p": round(100 * ev.get("probability", 0))}
    if code == "answerable_without_image":
        text = _("Every run made without the image answers it correctly.")
        task = ev.get("task") or {}
        if task.get("flagged"):
            text += " " + _(
                "Its task “%(task)s” is answered %(acc)s%% of the time without images "
                "(chance %(chance)s%%): the task may not test vision."
            ) % {
                "task": task.get("task") or "—",
                "acc": round(100 * task["accuracy"]),
                "chance": round(100 * task["chance"]),
            }
        return text
    if code == "split_leakage":
        return _("The same frame appears in another split: a test item may have been seen.")
    if code == "duplicate_image":
        return _("A near-identical image (re-encoded or resized) is stored for another item.")
    if code == "duplicate_question":
        return _("Another item asks the same question with the same options.")
    if code == "empty_question":
        return _("The question is empty or reads as missing.")
    if code == "answer_out_of_range":
        return _("The answer %(answer)s is not one of the options.") % {
            "answer": ev.get("answer") or "—"
        }
    if code == "empty_option":
        return _("An option is spelled like a missing value (%(texts)s): pandas and "
                 "VLMEvalKit drop it.") % {
            "texts": ", ".join(f"{o['letter']} = “{o['text']}”" for o in ev.get("options", []))
        }  # fmt: skip
    if code == "gt_mismatch":
        text = _("The gt text “%(gt)s” is not the answer's option “%(answer_text)s”.") % ev
        if ev.get("matches"):
            text += " " + _("It is the text of option %(letter)s.") % {"letter": ev["matches"][0]}
        return text
    if code == "duplicate_options":
        return _("Several options have the same text: %(letters)s.") % {
            "letters": "; ".join(" = ".join(group) for group in ev.get("letters", []))
        }
    if code == "degradation_modality_mismatch":
        return (
            _("The degradation “%(degradation_type)s” does not apply to %(modality)s images.") % ev
        )
    if code in ("reviewer_rejected", "reviewer_edited"):
        return _("%(count)s of %(reviews)s reviewers did this; the others did not.") % ev
    if code == "slow_review":
        return _("A review took %(seconds)s s; the median is %(median)s s.") % ev
    return ""


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
