"""Reviewer queue and review page (htmx work area), and the curator's assignment page."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import push_url

from annotations.access import CURATOR, REVIEWER, role_required
from annotations.models import ItemStatus, RejectReason
from annotations.selectors import review as selectors
from annotations.selectors import visibility
from annotations.services.errors import ConflictError, DomainError
from annotations.services.review import assignments_create, review_submit
from annotations.views.content import posted_content

PAGE = "review/page.html"


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=[("accept", "accept"), ("edit", "edit"), ("reject", "reject")]
    )
    version = forms.IntegerField(min_value=1)
    question = forms.CharField(required=False, strip=False)
    answer = forms.CharField(required=False, max_length=1)
    reason = forms.CharField(required=False)
    comment = forms.CharField(required=False)
    seconds_spent = forms.FloatField(required=False, min_value=0)

    def content(self, data) -> dict | None:
        if self.cleaned_data["verdict"] != "edit":
            return None
        return posted_content(
            data, question=self.cleaned_data["question"], answer=self.cleaned_data["answer"]
        )


def work_context(page: selectors.ReviewPage, **extra) -> dict:
    return {
        "page": page,
        "item": page.item,
        "reasons": RejectReason.choices,
        "progress": page.progress,
        **extra,
    }


def _render(
    request: HttpRequest, context: dict, *, status: int = 200, url: str = ""
) -> HttpResponse:
    template = f"{PAGE}#work" if request.htmx else PAGE
    response = render(request, template, context, status=status)
    if request.htmx and url:
        push_url(response, url)
    return response


@require_GET
@role_required(REVIEWER)
def queue(request: HttpRequest) -> HttpResponse:
    """The next item of my queue (`?after=ID` skips past assignment ID, wrapping round)."""
    after = request.GET.get("after", "")
    assignment = selectors.queue_next(request.user, after=int(after) if after.isdigit() else None)
    if assignment is None:
        context = {"progress": selectors.queue_progress(request.user), "empty": True}
        return _render(request, context, url=reverse("review-queue"))
    url = reverse("review-item", args=[assignment.item_id])
    if not request.htmx:
        return redirect(url)
    page = selectors.review_page(request.user, assignment.item_id)
    return _render(request, work_context(page), url=url)


@require_http_methods(["GET", "POST"])
@role_required(REVIEWER)
def review_item(request: HttpRequest, pk: int) -> HttpResponse:
    page = selectors.review_page(request.user, pk)
    if request.method == "GET":
        return _render(request, work_context(page))
    form = ReviewForm(request.POST)
    if not form.is_valid():
        return _render(request, work_context(page, error=_("Choose a verdict.")), status=400)
    try:
        _submit(request, page, form)
    except ConflictError as error:
        context = work_context(page, error=str(error), conflict=True)
        return _render(request, context, status=409)
    except DomainError as error:
        return _render(request, work_context(page, error=str(error)), status=400)
    following = selectors.queue_next(request.user, after=page.assignment.pk)
    if following is None:
        if not request.htmx:
            return redirect("review-queue")
        context = {"progress": selectors.queue_progress(request.user), "empty": True}
        return _render(request, context, url=reverse("review-queue"))
    url = reverse("review-item", args=[following.item_id])
    if not request.htmx:
        return redirect(url)
    return _render(
        request, work_context(selectors.review_page(request.user, following.item_id)), url=url
    )


def _submit(request: HttpRequest, page: selectors.ReviewPage, form: ReviewForm):
    data = form.cleaned_data
    return review_submit(
        item=page.item,
        reviewer=request.user,
        verdict=data["verdict"],
        version=data["version"],
        content=form.content(request.POST),
        reason=data["reason"],
        comment=data["comment"],
        seconds_spent=data["seconds_spent"],
    )


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


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def assign(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    users = selectors.reviewer_choices()
    form = AssignForm(request.POST or None, users=users, initial={"per_item": 2})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        chosen = [u for u in users if u.username in data["reviewers"]]
        filters = {k: data[k] for k in ("status", "category", "split") if data[k]}
        try:
            created = assignments_create(
                benchmark=benchmark,
                reviewers=chosen,
                per_item=data["per_item"],
                filters=filters,
                assigned_by=request.user,
            )
        except DomainError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, _("%(n)d assignments created.") % {"n": created})
            return redirect("review-assign", name=benchmark.name)
    counts = selectors.benchmark_status_counts(benchmark)
    context = {
        "benchmark": benchmark,
        "form": form,
        "users": users,
        "status_rows": [
            (value, label, counts.get(value, 0)) for value, label in ItemStatus.choices
        ],
        "clinicians": selectors.clinician_choices(),
        "baselines": selectors.baseline_runs().filter(benchmark=benchmark),
    }
    return render(request, "review/assign.html", context)
