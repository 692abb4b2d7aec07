"""Model runs for curators: list and start runs, follow one live, read its predictions, leaderboard."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotations.access import CURATOR, role_required
from annotations.forms import RunCreateForm
from annotations.models import (
    ModelEndpoint,
    Run,
    RunKind,
    RunStatus,
)
from annotations.scoring import VLMEVAL_COMMIT
from annotations.selectors import calibration as calibration_selectors
from annotations.selectors import review as review_selectors
from annotations.selectors import runs as run_selectors
from annotations.selectors import visibility
from annotations.services import runs as run_services
from annotations.services.errors import DomainError

RETRIEVAL_PROMPT = _(
    "No prompt: each report's text and its case's images (as data URLs) are sent to the "
    "endpoint's /v1/embeddings (model: %(model)s); reports and cases are ranked by cosine "
    "similarity within the run, in both directions."
)


def _endpoint(form: RunCreateForm) -> ModelEndpoint:
    """The chosen endpoint: a baseline, a saved endpoint, or a new one made from the form."""
    source = form.cleaned_data["source"]
    if source.startswith("baseline:"):
        return run_services.endpoint_ensure_baseline(baseline=source.split(":", 1)[1])
    if source.startswith("endpoint:"):
        return get_object_or_404(ModelEndpoint, pk=int(source.split(":", 1)[1]))
    return run_services.endpoint_ensure_openai(
        name=form.cleaned_data["name"],
        base_url=form.cleaned_data["base_url"],
        model=form.cleaned_data["model"],
        api_key_env=form.cleaned_data["api_key_env"] or "",
        api_key=form.cleaned_data["api_key"] or "",
    )


def _judge(form: RunCreateForm) -> ModelEndpoint | None:
    chosen = form.cleaned_data.get("judge")
    return get_object_or_404(ModelEndpoint, pk=int(chosen)) if chosen else None


def _list_page(request: HttpRequest, form: RunCreateForm, status: int = 200) -> HttpResponse:
    runs = list(visibility.in_scope(run_selectors.run_list(), request.user)[:200])
    return render(request, "runs/list.html", {"runs": runs, "form": form}, status=status)


@require_GET
@role_required(CURATOR)
def run_list(request: HttpRequest) -> HttpResponse:
    initial = {"benchmark": request.GET.get("benchmark", "")}
    return _list_page(request, RunCreateForm(initial=initial))


@require_POST
@role_required(CURATOR)
def run_create(request: HttpRequest) -> HttpResponse:
    form = RunCreateForm(request.POST)
    if not form.is_valid():
        return _list_page(request, form, status=400)
    try:
        run = run_services.run_create(
            benchmark=form.cleaned_data["benchmark"],
            endpoint=_endpoint(form),
            filters=form.filters(),
            with_image=form.cleaned_data["with_image"],
            concurrency=form.cleaned_data["concurrency"],
            label=form.cleaned_data["label"],
            created_by=request.user,
            judge=_judge(form),
            lenient=form.cleaned_data["lenient"],
        )
    except DomainError as error:
        form.add_error(None, str(error))
        return _list_page(request, form, status=400)
    messages.success(request, _("Run started."))
    return redirect("run", pk=run.pk)


@require_GET
@role_required(CURATOR)
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = visibility.get_run_for_user_or_404(request.user, pk, run_selectors.run_list())
    # Its predictions' hits give the gold answers away.
    visibility.check_gold_visible(request.user, run.benchmark_id)
    if request.htmx and request.htmx.target == "run-progress":
        if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            # Finished: reload the whole page once, so the scores and predictions appear.
            return HttpResponseClientRefresh()
        context = {"run": run, "clinicians": _other_clinicians(run), "strip": _strip(run)}
        return render(request, "runs/detail.html#progress", context)
    wrong_only = request.GET.get("wrong") == "1"
    unmatched_only = request.GET.get("unmatched") == "1"
    by = request.GET.get("by", "")
    field_name, _sep, value = by.partition("=")
    predictions = run_selectors.run_predictions(
        run=run,
        wrong_only=wrong_only,
        unmatched_only=unmatched_only,
        field_name=field_name,
        value=value,
    )
    page = Paginator(predictions, 50).get_page(request.GET.get("page"))
    field_values = run_selectors.run_field_values(run)
    context = {
        "run": run,
        "page": page,
        "field_values": field_values,
        "clinicians": _other_clinicians(run),
        "strip": _strip(run),
        "filters": {
            "wrong": "1" if wrong_only else "",
            "unmatched": "1" if unmatched_only else "",
            "by": by,
        },
        # Whoever looks at the replies VLMEvalKit could not read sees the lenient reading too.
        "show_lenient": run.lenient or unmatched_only,
        "vlmeval_table": run_selectors.run_vlmeval_table(run),
        "vlmeval_commit": VLMEVAL_COMMIT,
        "breakdown": _breakdown(run),
        "task_scores": run_selectors.run_task_scores(run),
        "task_prompts": _task_prompts(run),
        "filter_chips": [_filter_chip(key, value) for key, value in (run.filters or {}).items()],
        "calibration": calibration_selectors.run_calibration(run),
        "cliffs": calibration_selectors.run_cliffs(run),
    }
    return render(request, "runs/detail.html", context)


def _task_prompts(run: Run) -> list[tuple[str, str]]:
    """The prompt of each task the run's benchmark has, with placeholders (shown on its page)."""
    from annotations.inference.task_prompts import task_prompt_overview

    tasks = run_selectors.benchmark_tasks(run.benchmark)
    if tasks == ["vqa"]:
        return []  # a multiple-choice benchmark: VLMEvalKit's prompt, said in the line above
    prompts = task_prompt_overview()
    model = ""
    if run.endpoint is not None:
        model = (run.endpoint.params or {}).get("embedding_model") or run.endpoint.model
    prompts["retrieval"] = str(RETRIEVAL_PROMPT) % {"model": model or "—"}
    return [(task, prompts[task]) for task in tasks]


def _filter_chip(key: str, value) -> tuple[str, str]:
    if key == "item_ids":  # a limited session's fixed items: how many, not every id
        return str(_("Items")), str(len(value))
    return key, ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _strip(run: Run) -> run_selectors.ChunkStrip | None:
    """The chunks' progress strip; a human baseline has no chunks."""
    return None if run.kind == RunKind.HUMAN else run_selectors.run_chunk_strip(run=run)


def _other_clinicians(run: Run) -> list:
    """Who a human baseline's items can be given to (`baseline_reassign`); none for a model."""
    if run.kind != "human":
        return []
    return [p for p in review_selectors.clinician_choices() if p.pk != run.human_id]


def _breakdown(run: Run) -> list[tuple[str, list[tuple[str, dict]]]]:
    by = (run.summary or {}).get("by", {})
    return [(name, list(by[name].items())) for name in run_services.SUMMARY_FIELDS if by.get(name)]


@require_POST
@role_required(CURATOR)
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=pk)
    if run_services.run_cancel(run=run):
        messages.success(request, _("Run cancelled."))
    else:
        messages.info(request, _("This run had already ended."))
    return redirect("run", pk=run.pk)


@require_POST
@role_required(CURATOR)
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("benchmark"), pk=pk)
    try:
        cleared = run_services.run_retry(run=run)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            ngettext(
                "%(n)d failed answer cleared; the run is queued again.",
                "%(n)d failed answers cleared; the run is queued again.",
                cleared,
            )
            % {"n": cleared},
        )
    return redirect("run", pk=run.pk)


@require_POST
@role_required(CURATOR)
def run_rescore(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("benchmark"), pk=pk)
    try:
        changed = run_services.run_rescore(run=run)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            ngettext(
                "Read again as VLMEvalKit %(commit)s reads: %(n)d answer changed.",
                "Read again as VLMEvalKit %(commit)s reads: %(n)d answers changed.",
                changed,
            )
            % {"n": changed, "commit": run.vlmeval_commit},
        )
    return redirect("run", pk=run.pk)


@require_GET
@role_required(CURATOR)
def leaderboard_detail(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    visibility.check_gold_visible(request.user, benchmark.pk)
    tasks = [task for task in run_selectors.benchmark_tasks(benchmark) if task != "vqa"]
    task = request.GET.get("task", "")
    context = {"benchmark": benchmark, "tasks": tasks, "task": task}
    if task in tasks:
        context["task_board"] = run_selectors.task_leaderboard(
            benchmark=benchmark, task=task, sort=request.GET.get("sort", "")
        )
        return render(request, "runs/leaderboard.html", context)
    context["board"] = run_selectors.leaderboard(
        benchmark=benchmark,
        field_name=request.GET.get("field", ""),
        sort=request.GET.get("sort", ""),
    )
    return render(request, "runs/leaderboard.html", context)
