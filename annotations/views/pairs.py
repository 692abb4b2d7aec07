"""Degraded/clean pairs: start degradation, review a pair side by side, robustness of runs."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, ROLES, has_role, role_required
from annotations.forms import DegradeForm, PairReviewForm
from annotations.models import Benchmark, SeverityJudgement
from annotations.selectors import pairs as selectors
from annotations.selectors import visibility
from annotations.selectors.review import review_may_change
from annotations.services.degrade import degrade_job_start
from annotations.services.errors import DomainError
from annotations.services.pair_review import (
    LEFT,
    benchmark_pairs_blind,
    degraded_side,
    pair_review_submit,
)
from annotations.services.review_changes import review_withdraw

BLIND_SESSION_KEY = "pairs_blinded"


def _blinded(request: HttpRequest, benchmark: Benchmark | None = None) -> bool:
    """The reviewer's own mode, or the benchmark's when its curator blinded its pair reviews."""
    if benchmark is not None and benchmark.pairs_blinded:
        return True
    return bool(request.session.get(BLIND_SESSION_KEY, False))


@require_GET
@role_required(*ROLES)
def pair_list(request: HttpRequest) -> HttpResponse:
    context = {"blinded": _blinded(request)}
    if has_role(request.user, REVIEWER):
        context["progress"] = selectors.pair_progress(request.user)
        context["always_blinded"] = selectors.blinded_pair_benchmarks(request.user)
    if has_role(request.user, CURATOR, ADJUDICATOR):
        context["benchmarks"] = selectors.pair_benchmarks(request.user)
    return render(request, "pairs/home.html", context)


@require_POST
@role_required(REVIEWER)
def pair_blind_toggle(request: HttpRequest) -> HttpResponse:
    # A reviewer's own study mode: sides shuffled and "which is degraded?" asked first.
    request.session[BLIND_SESSION_KEY] = request.POST.get("blinded") == "1"
    return redirect("pairs")


@require_POST
@role_required(CURATOR)
def pair_blind_set(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, name=name)
    benchmark_pairs_blind(benchmark=benchmark, blinded=request.POST.get("blinded") == "1")
    if benchmark.pairs_blinded:
        messages.success(request, _("Every pair review of %s is now blinded.") % benchmark.name)
    else:
        messages.success(
            request, _("Pair reviews of %s follow each reviewer's own mode.") % benchmark.name
        )
    return redirect("pairs")


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def benchmark_degrade(request: HttpRequest, name: str) -> HttpResponse:
    form = DegradeForm(request.POST or None)
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    if request.method == "POST" and form.is_valid():
        job = degrade_job_start(benchmark=benchmark, params=form.cleaned_data, user=request.user)
        return redirect("job", pk=job.pk)
    context = {
        "benchmark": benchmark,
        "form": form,
        "overview": selectors.degrade_overview(benchmark),
    }
    return render(request, "pairs/degrade.html", context)


@require_GET
@role_required(REVIEWER)
def pair_next(request: HttpRequest) -> HttpResponse:
    after = request.GET.get("after", "")
    assignment = selectors.pair_queue_next(
        request.user, after=int(after) if after.isdigit() else None
    )
    if assignment is None:
        messages.info(request, _("No pair is waiting for your review."))
        return redirect("pairs")
    return redirect("pair-review", pk=assignment.item_id)


def _sides(page: selectors.PairPage, user, blinded: bool) -> list[dict]:
    clean_images = list(page.clean.item_images.all())
    degraded_images = list(page.item.item_images.all())
    clean = {"image": clean_images[0].image if clean_images else None, "role": "clean"}
    degraded = {"image": degraded_images[0].image if degraded_images else None, "role": "degraded"}
    if not blinded:
        return [clean, degraded]
    # The role never reaches the page in blind mode: only the order of the two images.
    left_is_degraded = degraded_side(item_id=page.item.pk, reviewer_id=user.pk) == LEFT
    ordered = [degraded, clean] if left_is_degraded else [clean, degraded]
    return [{"image": side["image"], "role": ""} for side in ordered]


@require_http_methods(["GET", "POST"])
@role_required(REVIEWER)
def pair_review(request: HttpRequest, pk: int) -> HttpResponse:
    form = PairReviewForm(request.POST or None)
    page = selectors.pair_page(request.user, pk)
    blinded = _blinded(request, page.item.benchmark)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            pair_review_submit(
                item=page.item,
                reviewer=request.user,
                version=data["version"],
                answerable=data["answerable"],
                realism=data["realism"],
                severity_judgement=data["severity_judgement"],
                comment=data["comment"],
                blinded=blinded,
                identified_side=data["identified_side"],
                seconds_spent=data["seconds_spent"],
            )
        except DomainError as error:
            form.add_error(None, str(error))
        else:
            _reveal(request, page, blinded, data["identified_side"])
            return redirect(f"{reverse('pair-next')}?after={page.assignment.pk}")
    context = {
        "page": page,
        "item": page.item,
        "form": form,
        "can_withdraw": _may_withdraw(request, page),
        "blinded": blinded,
        "blinded_by_curator": page.item.benchmark.pairs_blinded,
        "sides": _sides(page, request.user, blinded),
        "realism_range": range(1, 6),
        "severity_choices": SeverityJudgement.choices,
    }
    return render(request, "pairs/review.html", context, status=400 if form.errors else 200)


def _may_withdraw(request: HttpRequest, page: selectors.PairPage) -> bool:
    # A blinded judgement cannot be taken back: the degraded side was revealed after it.
    review = page.review
    if review is None or review.identified_degraded_side:
        return False
    return review_may_change(request.user, page.item)


@require_POST
@role_required(REVIEWER)
def pair_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    """Take back my (unblinded) pair judgement while the other review is not in."""
    page = selectors.pair_page(request.user, pk)
    if not _may_withdraw(request, page):
        messages.error(request, _("This judgement can no longer be withdrawn."))
        return redirect("pair-review", pk=pk)
    try:
        review_withdraw(item=page.item, reviewer=request.user, version=page.item.version)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Your judgement is withdrawn. Judge the pair again."))
    return redirect("pair-review", pk=pk)


def _reveal(request: HttpRequest, page: selectors.PairPage, blinded: bool, side: str) -> None:
    if not blinded:
        messages.success(request, _("Pair review saved."))
        return
    actual = degraded_side(item_id=page.item.pk, reviewer_id=request.user.pk)
    where = _("left") if actual == LEFT else _("right")
    if side == actual:
        messages.success(request, _("Saved. Correct: the degraded image was on the %s.") % where)
    else:
        messages.warning(request, _("Saved. The degraded image was on the %s.") % where)


@require_GET
@role_required(CURATOR, ADJUDICATOR)
def robustness_detail(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    visibility.check_gold_visible(request.user, benchmark.pk)
    reports = selectors.robustness(benchmark)
    context = {"benchmark": benchmark, "reports": reports, "levels": selectors.LEVELS}
    return render(request, "pairs/robustness.html", context)
