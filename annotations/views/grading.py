"""Blinded side-by-side grading: sessions (curators), the grading page (clinicians), ratings."""

from __future__ import annotations

import time

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, has_role, role_required
from annotations.forms import GradeForm, SessionCreateForm
from annotations.models import (
    Benchmark,
    GradingSession,
    GradingTask,
    Item,
)
from annotations.selectors import grading as grading_selectors
from annotations.selectors import visibility
from annotations.selectors.report_grading import report_agreement
from annotations.services import grading as grading_services
from annotations.services.errors import DomainError
from annotations.views.case_panel import case_panel_context

GRADERS = (REVIEWER, ADJUDICATOR)


REPORT_CRITERIA_LABELS = {
    "correct_findings": _("Correct findings"),
    "omissions": _("Omissions"),
    "hallucinations": _("Hallucinations"),
    "overall": _("Overall"),
}


@require_GET
@role_required(CURATOR, *GRADERS)
def grading_list(request: HttpRequest) -> HttpResponse:
    is_curator = has_role(request.user, CURATOR)
    sessions = grading_selectors.grading_sessions(
        viewer=request.user, grader=None if is_curator else request.user
    )
    context = {
        "sessions": sessions,
        "form": SessionCreateForm(graders=grading_selectors.grader_choices())
        if is_curator
        else None,
        "show_names": is_curator,  # graders never see which runs a session compares
    }
    return render(request, "runs/grading_index.html", context)


@require_POST
@role_required(CURATOR)
def grading_session_create(request: HttpRequest) -> HttpResponse:
    form = SessionCreateForm(request.POST, graders=grading_selectors.grader_choices())
    if form.is_valid():
        try:
            grading_services.grading_session_create(
                run_a=form.cleaned_data["run_a"],
                run_b=form.cleaned_data["run_b"],
                task=form.cleaned_data["task"] or "",
                created_by=request.user,
                graders=form.cleaned_data["graders"],
            )
        except DomainError as error:
            form.add_error(None, str(error))
    if not form.is_valid():
        sessions = grading_selectors.grading_sessions(viewer=request.user)
        context = {"sessions": sessions, "form": form, "show_names": True}
        return render(request, "runs/grading_index.html", context, status=400)
    messages.success(request, _("Grading session created: clinicians can now grade it."))
    return redirect("grading")


@require_http_methods(["GET", "POST"])
@role_required(*GRADERS)
def grade_item(request: HttpRequest, pk: int) -> HttpResponse:
    sessions = visibility.with_gold_hidden(
        visibility.gradable_by(
            GradingSession.objects.select_related("run_a__benchmark"), request.user
        ),
        request.user,
        benchmark_path="run_a__benchmark",
    )
    session = visibility.get_grading_session_for_user_or_404(request.user, pk, sessions)
    if request.method == "POST":
        form = GradeForm(request.POST, scales=grading_services.rubric_scores(session))
        if form.is_valid():
            item = get_object_or_404(
                Item, pk=form.cleaned_data["item"], benchmark_id=session.run_a.benchmark_id
            )
            try:
                grading_services.grade_submit(
                    session=session,
                    item=item,
                    grader=request.user,
                    preference=form.cleaned_data["preference"],
                    rubric=form.rubric(),
                    seconds_spent=form.seconds_spent(),
                )
            except DomainError as error:
                messages.error(request, str(error))
            return redirect("grade", pk=session.pk)
        messages.error(request, _("Choose which answer is better before saving."))
    return _grade_page(request, session)


def _grade_page(request: HttpRequest, session: GradingSession) -> HttpResponse:
    item = grading_selectors.grading_next_item(session=session, grader=request.user)
    progress = grading_selectors.grading_progress(session=session, grader=request.user)
    context: dict = {
        "session": session,
        "item": item,
        "progress": progress,
        "gold_visible": not session.gold_hidden,
    }
    if item is not None:
        predictions = grading_selectors.grading_item_predictions(session=session, item=item)
        left, right = grading_services.grade_sides(
            session=session, item=item, grader=request.user, predictions=predictions
        )
        options = dict(item.lettered_options)
        # Only the answers travel to the page: never a run, an endpoint or a prediction id; and
        # for a report beside the reference, nothing that tells which of the two is the model's.
        context["answers"] = [
            {
                "side": side,
                "key": key,
                "text": prediction.raw_text if prediction else item.reference,
                "extracted": prediction.extracted if prediction else "",
                "extracted_text": options.get(prediction.extracted, "") if prediction else "",
            }
            for side, key, prediction in (("left", "A", left), ("right", "B", right))
        ]
        context["criteria"] = grading_services.RUBRIC_CRITERIA
        context["reports"] = session.task == GradingTask.REPORTS
        if context["reports"]:
            context["report_rubric"] = [
                (name, REPORT_CRITERIA_LABELS[name], scores)
                for name, scores in grading_services.REPORT_SCORES.items()
            ]
            # Two models' reports are read against the reference; a model's report beside the
            # reference is not (the reference is one of the two sides).
            context["show_reference"] = bool(session.run_b_id) and not session.gold_hidden
        if item.case_id is not None:
            # The case beside the answers (CT phases, endoscopy, indicators, the other reports),
            # as a reviewer sees it; nothing in it names a run. The report being graded stays
            # out of it: against the reference it is one of the two sides.
            seen = not session.gold_hidden
            context["case_view"] = case_panel_context(request, item, gold=seen, others_visible=seen)
        context["shown_at"] = time.time()
    return render(request, "runs/grade.html", context)


@require_GET
@role_required(CURATOR)
def grading_ratings(request: HttpRequest) -> HttpResponse:
    name = request.GET.get("benchmark", "")
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name) if name else None
    reports = request.GET.get("task") == GradingTask.REPORTS
    result = grading_selectors.grading_ratings(
        benchmark=benchmark, task=GradingTask.REPORTS if reports else None
    )
    context = {
        "result": result,
        "benchmark": benchmark,
        "benchmarks": Benchmark.objects.order_by("name"),
        "reports": reports,
        "report_agreement": report_agreement(benchmark=benchmark) if reports else None,
    }
    return render(request, "runs/ratings.html", context)
