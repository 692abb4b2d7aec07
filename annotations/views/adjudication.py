"""Adjudication of disputed items (side by side, differences highlighted) and item history."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import push_url

from annotations.access import ADJUDICATOR, ROLES, role_required
from annotations.forms import AdjudicateForm
from annotations.models import Item, ItemKind, Review
from annotations.models.item import LETTERS
from annotations.selectors import review as selectors
from annotations.selectors import visibility
from annotations.services.errors import ConflictError, DomainError
from annotations.services.item_content import label_set
from annotations.services.review import item_adjudicate
from annotations.views.case_panel import case_panel_context
from annotations.views.content import (
    content_diff,
    kind_draft,
    posted_content,
    posted_item_content,
    version_change,
)

PAGE = "review/adjudicate.html"


def review_card(review: Review | None, original: dict, label: str, kind: str) -> dict | None:
    if review is None:
        return None
    card = {"review": review, "label": label}
    if review.verdict == "edit":
        card["diff"] = content_diff(original, review.content or {}, kind)
    if review.realism is not None or review.severity_judgement:
        # A pair review: what was judged, and in a blinded review whether the degraded side
        # was found (the pair agreement rule compares these, not the verdict alone).
        card["pair"] = {
            "answerable": review.answerable,
            "realism": review.realism,
            "severity": review.get_severity_judgement_display(),
            "guess": review.identified_degraded_side,
            "found": bool(review.identified_degraded_side)
            and review.identified_degraded_side == review.degraded_side,
        }
    return card


def _draft(item: Item, post=None) -> dict:
    """The adjudication form's content: the item, or what was posted (kept on a refusal)."""
    if post is None:
        return {"mode": "view", "question": item.question, "options": item.lettered_options,
                "answer": item.answer, "comment": "", "kind": kind_draft(item)}  # fmt: skip
    content = posted_content(post, question=post.get("question", ""), answer="")
    mode = "reject" if post.get("reject") else ("edit" if post.get("choice") == "new" else "view")
    return {
        "mode": mode,
        "question": content["question"],
        "options": list(zip(LETTERS, content["options"], strict=False)) or item.lettered_options,
        "answer": content["answer"] or post.get("answer", ""),
        "comment": post.get("comment", ""),
        "kind": kind_draft(item, post=post),
    }


def _context(page: selectors.AdjudicationPage, request: HttpRequest, **extra) -> dict:
    original = page.item.content()
    extra.setdefault("draft", _draft(page.item))
    kind = page.item.kind
    if page.item.case_id is not None:
        # adjudication_page let only someone who may read the reviews (and the gold) in.
        extra["case_panel"] = case_panel_context(request, page.item, gold=True, others_visible=True)
    edits = [r for r in (page.review_a, page.review_b) if r is not None and r.verdict == "edit"]
    if kind == ItemKind.OPEN and len(edits) == 2:
        extra["ab_diff"] = content_diff(edits[0].content or {}, edits[1].content or {}, kind)
    return {
        "page": page,
        "item": page.item,
        "cards": [
            review_card(page.review_a, original, "A", page.item.kind),
            review_card(page.review_b, original, "B", page.item.kind),
        ],
        "label_choices": label_set(page.item) if page.item.kind == "label" else [],
        **extra,
    }


def _render(request: HttpRequest, context: dict, *, status: int = 200, url: str = ""):
    response = render(request, f"{PAGE}#work" if request.htmx else PAGE, context, status=status)
    if request.htmx and url:
        push_url(response, url)
    return response


@require_GET
@role_required(ADJUDICATOR)
def adjudication_list(request: HttpRequest) -> HttpResponse:
    """Every dispute, each saying whether I may settle it (never one I reviewed)."""
    disputes = selectors.adjudication_overview(request.user)
    page = Paginator(disputes, 50).get_page(request.GET.get("page"))
    first = selectors.adjudication_queue(request.user).first()
    return render(request, "review/adjudication_list.html", {"page": page, "first": first})


def _own_review_refusal(request: HttpRequest, pk: int, why: str) -> HttpResponse:
    # The item's reviews are not shown to one of its reviewers (nor to someone still reviewing
    # its case): only why they may not settle it.
    item = visibility.get_item_for_user_or_404(
        request.user, pk, Item.objects.select_related("benchmark")
    )
    if why == "own_review":
        error = _("You reviewed this item: another adjudicator must settle it.")
    else:
        error = _("You are still reviewing this case: another adjudicator must settle it.")
    context = {"item": item, "own_review": True, "error": error}
    return _render(request, context, status=403)


@require_http_methods(["GET", "POST"])
@role_required(ADJUDICATOR)
def adjudication_item(request: HttpRequest, pk: int) -> HttpResponse:
    why = selectors.why_not_settled_by(request.user, Item(pk=pk))
    if why:
        return _own_review_refusal(request, pk, why)
    page = selectors.adjudication_page(request.user, pk)
    if request.method == "GET":
        return _render(request, _context(page, request))
    form = AdjudicateForm(request.POST)
    draft = _draft(page.item, request.POST)
    if not form.is_valid():
        context = _context(page, request, error=_("Choose A, B or a new version."), draft=draft)
        return _render(request, context, status=400)
    data = form.cleaned_data
    try:
        item_adjudicate(
            item=page.item,
            adjudicator=request.user,
            choice=data["choice"],
            version=data["version"],
            content=posted_item_content(
                page.item, request.POST, question=data["question"], answer=data["answer"]
            ),
            reject=data["reject"],
            comment=data["comment"],
        )
    except DomainError as error:
        return _refusal(request, pk, error, draft=draft, seen=data["version"])
    return _next_dispute(request)


def _refusal(request, pk: int, error: DomainError, *, draft: dict, seen: int) -> HttpResponse:
    """A refused decision in the work area, over the item as it is now, the draft kept."""
    page = selectors.adjudication_page(request.user, pk)
    extra = {"error": str(error), "draft": draft, "refused": True}
    if isinstance(error, ConflictError):
        extra.update(conflict=True, change=version_change(page.item, seen))
    status = 409 if isinstance(error, ConflictError) else 400
    return _render(request, _context(page, request, **extra), status=status)


def _next_dispute(request: HttpRequest) -> HttpResponse:
    following = selectors.adjudication_queue(request.user).first()
    if following is None:
        return redirect("adjudication") if not request.htmx else _done(request)
    url = reverse("adjudicate", args=[following.pk])
    if not request.htmx:
        return redirect(url)
    return _render(
        request, _context(selectors.adjudication_page(request.user, following.pk), request), url=url
    )


def _done(request: HttpRequest) -> HttpResponse:
    return _render(request, {"empty": True}, url=reverse("adjudication"))


@require_GET
@role_required(*ROLES)
def item_history(request: HttpRequest, pk: int) -> HttpResponse:
    items = visibility.with_gold_hidden(
        Item.objects.select_related("benchmark"), request.user, benchmark_path="benchmark"
    )
    item = visibility.get_item_for_user_or_404(request.user, pk, items)
    visibility.check_reviews_visible(request.user, item)
    events = selectors.item_history(item)
    return render(request, "review/history.html", {"item": item, "events": events})
