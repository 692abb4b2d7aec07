"""Reviewer queue and review page (htmx work area), and the curator's assignment page."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from annotations.access import CURATOR, REVIEWER, role_required
from annotations.forms import AssignForm, ReviewForm
from annotations.models import ItemStatus, RejectReason
from annotations.models.item import LETTERS
from annotations.selectors import review as selectors
from annotations.selectors import visibility
from annotations.services import review_changes
from annotations.services.errors import ConflictError, DomainError, NotAllowedError
from annotations.services.item_content import label_set
from annotations.services.review import assignments_create, review_submit
from annotations.views.box_tool import item_box_tool
from annotations.views.case_panel import case_panel_context
from annotations.views.content import (
    content_diff,
    kind_draft,
    posted_content,
    posted_item_content,
    version_change,
)

PAGE = "review/page.html"
# The benchmark whose queue the reviewer works in (opened from its hub); none: every benchmark.
QUEUE_SCOPE = "review_queue_benchmark"


def queue_scope(request: HttpRequest) -> int | None:
    return request.session.get(QUEUE_SCOPE)


def _empty_queue(request: HttpRequest) -> HttpResponse:
    scope = queue_scope(request)
    progress = (
        selectors.queue_progress(request.user)
        if scope is None
        else selectors.benchmark_progress(request.user, scope)
    )
    context = {"progress": progress, "empty": True, "queue_scoped": scope is not None}
    return _render(request, context, url=reverse("review-queue"))


def draft_of(*, item, review=None, post=None) -> dict:
    """What the decision form shows: the item as it is, my review (to change it), or what I
    posted (a refused decision keeps every typed word, chosen option and comment)."""
    if post is not None:
        verdict = post.get("verdict", "")
        content = posted_content(post, question=post.get("question", ""), answer="")
        return {
            "mode": verdict if verdict in ("edit", "reject") else "view",
            "question": content["question"],
            "options": list(zip(LETTERS, content["options"], strict=False))
            or item.lettered_options,
            "answer": content["answer"] or post.get("answer", ""),
            "reason": post.get("reason", ""),
            "comment": post.get("comment", ""),
            "kind": kind_draft(item, post=post),
        }
    if review is not None:
        content = review.content or item.content()
        options = [text for text in content.get("options", []) if text]
        return {
            "mode": review.verdict if review.verdict != "accept" else "view",
            "question": content.get("question", ""),
            "options": list(zip(LETTERS, options, strict=False)),
            "answer": content.get("answer", ""),
            "reason": review.reason,
            "comment": review.comment,
            "kind": kind_draft(item, content=content),
        }
    return {
        "mode": "view",
        "question": item.question,
        "options": item.lettered_options,
        "answer": item.answer,
        "reason": "",
        "comment": "",
        "kind": kind_draft(item),
    }


def work_context(page: selectors.ReviewPage, request: HttpRequest | None = None, **extra) -> dict:
    changing = extra.pop("changing", False)
    if request is not None and page.item.case_id is not None:
        seen = visibility.item_visibility(request.user, page.item)
        extra["case_panel"] = case_panel_context(
            request, page.item, gold=seen.gold, others_visible=seen.reviews
        )
    if "draft" not in extra:
        extra["draft"] = draft_of(item=page.item, review=page.review if changing else None)
    review = page.review
    if review is not None and review.verdict == "edit" and page.item.kind != "mcq":
        # My own proposal, beside the item as it is: a report edit is read as a diff.
        extra["own_diff"] = content_diff(page.item.content(), review.content or {}, page.item.kind)
    return {
        "page": page,
        "item": page.item,
        "label_choices": label_set(page.item) if page.item.kind == "label" else [],
        "reasons": RejectReason.choices,
        "progress": page.progress,
        "changing": changing,
        **extra,
    }


def _render(
    request: HttpRequest, context: dict, *, status: int = 200, url: str = ""
) -> HttpResponse:
    template = f"{PAGE}#work" if work_area_only(request) else PAGE
    # A Gastric-X item shows its case (CT and endoscopy with their own box tools) instead of
    # the item's images, so the 2D tool goes only with the images.
    if context.get("item") is not None and not context.get("case_panel"):
        context["box_tool"] = item_box_tool(context["item"], request.user)
    response = render(request, template, context, status=status)
    if request.htmx and url:
        push_url(response, url)
    return decision_page(response)


def work_area_only(request: HttpRequest) -> bool:
    """htmx swaps the work area; a history restore (Back past htmx's cache) needs the page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def decision_page(response: HttpResponse) -> HttpResponse:
    """Never kept by the browser: Back to a decided item asks the server, which shows it
    decided (not its Accept/Edit/Reject again); and a work area is never cached as the page."""
    patch_cache_control(response, no_store=True)
    patch_vary_headers(response, ["HX-Request"])
    return response


@require_GET
@role_required(REVIEWER)
def review_queue(request: HttpRequest) -> HttpResponse:
    """The next item of my queue (`?after=ID` skips past assignment ID, wrapping round).

    `?benchmark=NAME` (the hub's "Review my items") keeps the reviewer in that benchmark's queue
    until they open the queue of every benchmark (this page without parameters)."""
    after = request.GET.get("after", "")
    name = request.GET.get("benchmark", "")
    if name:
        benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
        request.session[QUEUE_SCOPE] = benchmark.pk
    elif not after:
        request.session.pop(QUEUE_SCOPE, None)
    scope = queue_scope(request)
    assignment = selectors.queue_next(
        request.user, after=int(after) if after.isdigit() else None, benchmark_id=scope
    )
    if assignment is None:
        return _empty_queue(request)
    url = reverse("review-item", args=[assignment.item_id])
    if not request.htmx:
        return redirect(url)
    page = selectors.review_page(request.user, assignment.item_id, queue_benchmark=scope)
    return _render(request, work_context(page, request), url=url)


@require_http_methods(["GET", "POST"])
@role_required(REVIEWER)
def review_item(request: HttpRequest, pk: int) -> HttpResponse:
    """My decision on an item; `?change=1` opens my verdict again while it may still change."""
    page = selectors.review_page(request.user, pk, queue_benchmark=queue_scope(request))
    if request.method == "GET":
        changing = request.GET.get("change") == "1" and page.can_change
        return _render(request, work_context(page, request, changing=changing))
    form = ReviewForm(request.POST, item=page.item)
    if not form.is_valid():
        return _refused(request, page, form.first_error(_("Choose a verdict.")), status=400)
    try:
        _submit(request, page, form)
    except DomainError as error:
        return _refusal(request, pk, error, seen=form.cleaned_data["version"])
    if request.POST.get("changing") == "1":
        page = selectors.review_page(request.user, pk, queue_benchmark=queue_scope(request))
        return _render(request, work_context(page, request, notice=_("Your verdict is changed.")))
    return _next_item(request, page)


def _next_item(request: HttpRequest, page: selectors.ReviewPage) -> HttpResponse:
    scope = queue_scope(request)
    following = selectors.queue_next(request.user, after=page.assignment.pk, benchmark_id=scope)
    if following is None:
        if not request.htmx:
            return redirect(f"{reverse('review-queue')}?after={page.assignment.pk}")
        return _empty_queue(request)
    url = reverse("review-item", args=[following.item_id])
    if not request.htmx:
        return redirect(url)
    following_page = selectors.review_page(request.user, following.item_id, queue_benchmark=scope)
    return _render(request, work_context(following_page, request), url=url)


def _refused(request, page, message: str, *, status: int, **extra) -> HttpResponse:
    draft = draft_of(item=page.item, post=request.POST)
    # Already decided but still open: the draft waits in the form that changes my verdict.
    changing = page.review is not None and page.can_change
    context = work_context(
        page, request, error=message, draft=draft, refused=True, changing=changing, **extra
    )
    return _render(request, context, status=status)


def _refusal(request: HttpRequest, pk: int, error: DomainError, *, seen: int) -> HttpResponse:
    """The refused decision in the work area, over the item as it is now, the draft kept."""
    page = selectors.review_page(request.user, pk, queue_benchmark=queue_scope(request))
    if isinstance(error, ConflictError):
        change = version_change(page.item, seen)
        return _refused(request, page, str(error), status=409, conflict=True, change=change)
    status = 403 if isinstance(error, NotAllowedError) else 400
    return _refused(request, page, str(error), status=status)


def _submit(request: HttpRequest, page: selectors.ReviewPage, form: ReviewForm):
    data = form.cleaned_data
    content = None
    if data["verdict"] == "edit":
        content = posted_item_content(
            page.item,
            request.POST,
            question=data.get("question", ""),
            answer=data.get("answer", ""),
        )
    # A form opened from my own review changes it; otherwise it is my first verdict.
    write = review_changes.review_change if request.POST.get("changing") == "1" else review_submit
    return write(
        item=page.item,
        reviewer=request.user,
        verdict=data["verdict"],
        version=data["version"],
        content=content,
        reason=data["reason"],
        comment=data["comment"],
        seconds_spent=data["seconds_spent"],
    )


@require_POST
@role_required(REVIEWER)
def review_withdraw(request: HttpRequest, pk: int) -> HttpResponse:
    """Take back my verdict while the other review is not in: the item is mine to do again."""
    page = selectors.review_page(request.user, pk, queue_benchmark=queue_scope(request))
    version = request.POST.get("version", "")
    try:
        review_changes.review_withdraw(
            item=page.item, reviewer=request.user, version=int(version) if version.isdigit() else 0
        )
    except DomainError as error:
        return _refusal(request, pk, error, seen=int(version) if version.isdigit() else 0)
    page = selectors.review_page(request.user, pk, queue_benchmark=queue_scope(request))
    context = work_context(page, request, notice=_("Your verdict is withdrawn. Decide again."))
    return _render(request, context, url=reverse("review-item", args=[pk]))


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def review_assign(request: HttpRequest, name: str) -> HttpResponse:
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
