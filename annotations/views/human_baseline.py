"""Human baseline: curators open a session for a clinician, who answers without the gold answer."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, role_required
from annotations.forms import BaselineAnswerForm, BaselineOpenForm
from annotations.models import Benchmark, Item, Run
from annotations.selectors import review as selectors
from annotations.services.errors import DomainError
from annotations.services.human_baseline import (
    baseline_left_out_notes,
    baseline_options,
    human_answer_submit,
    human_baseline_open,
    human_baseline_reassign,
    human_baseline_settle,
)

PAGE = "review/baseline.html"


@require_POST
@role_required(CURATOR)
def baseline_open(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, name=name)
    form = BaselineOpenForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a clinician."))
        return redirect("review-assign", name=name)
    data = form.cleaned_data
    clinician = get_user_model().objects.filter(username=data["clinician"]).first()
    if clinician is None:
        messages.error(request, _("Unknown clinician."))
        return redirect("review-assign", name=name)
    try:
        run = human_baseline_open(
            benchmark=benchmark,
            clinician=clinician,
            opened_by=request.user,
            filters={"category": data["category"], "split": data["split"]},
            limit=data["limit"],
        )
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            _("Human baseline opened for %(name)s: %(n)d items.")
            % {"name": clinician.get_username(), "n": run.total},
        )
        for note in baseline_left_out_notes(run):
            messages.info(
                request,
                _("Left out: %(count)d %(kind)s items (%(why)s).")
                % {"count": note["count"], "kind": note["kind"], "why": note["why"]},
            )
    return redirect("review-assign", name=name)


@require_POST
@role_required(CURATOR)
def baseline_reassign(request: HttpRequest, pk: int) -> HttpResponse:
    """The session's items for another clinician; the session itself ends (answers kept)."""
    run = get_object_or_404(Run.objects.select_related("benchmark"), pk=pk, kind="human")
    clinician = get_user_model().objects.filter(username=request.POST.get("clinician", "")).first()
    if clinician is None:
        messages.error(request, _("Unknown clinician."))
        return redirect("run", pk=run.pk)
    try:
        session = human_baseline_reassign(run=run, clinician=clinician, opened_by=request.user)
    except DomainError as error:
        messages.error(request, str(error))
        return redirect("run", pk=run.pk)
    messages.success(
        request,
        _("Human baseline opened for %(name)s: %(n)d items.")
        % {"name": clinician.get_username(), "n": session.total},
    )
    return redirect("run", pk=session.pk)


@require_GET
@role_required(REVIEWER, ADJUDICATOR)
def baseline_list(request: HttpRequest) -> HttpResponse:
    runs = selectors.baseline_sessions(request.user)
    return render(request, "review/baseline_list.html", {"runs": runs})


def _render(request: HttpRequest, run: Run, *, status: int = 200, **extra) -> HttpResponse:
    item = selectors.next_baseline_item(run)
    context = {
        "run": run,
        "item": item,
        "options": baseline_options(item, run.benchmark.label_sets) if item else [],
        "left_out": baseline_left_out_notes(run),
        **extra,
    }
    response = render(request, f"{PAGE}#work" if request.htmx else PAGE, context, status=status)
    if request.htmx:
        push_url(response, reverse("baseline", args=[run.pk]))
    return response


@require_http_methods(["GET", "POST"])
@role_required(REVIEWER, ADJUDICATOR)
def baseline_answer(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.baseline_session(request.user, pk)
    if request.method == "GET":
        return _render(request, human_baseline_settle(run=run))
    form = BaselineAnswerForm(request.POST)
    if not form.is_valid():
        return _render(request, run, status=400, error=_("Pick one of the options."))
    data = form.cleaned_data
    item = get_object_or_404(Item, pk=data["item"], benchmark_id=run.benchmark_id)
    try:
        human_answer_submit(
            run=run,
            item=item,
            user=request.user,
            letter=data["letter"],
            seconds_spent=data["seconds_spent"],
        )
    except DomainError as error:
        return _render(request, run, status=400, error=str(error))
    run.refresh_from_db()
    if not request.htmx:
        return redirect("baseline", pk=run.pk)
    return _render(request, run)
