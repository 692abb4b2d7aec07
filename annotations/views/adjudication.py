"""Adjudication of disputed items (side by side, differences highlighted) and item history."""

from __future__ import annotations

import difflib
import re

from django import forms
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import push_url

from annotations.access import ADJUDICATOR, ROLES, role_required
from annotations.models import AdjudicationChoice, Item, Review
from annotations.models.item import LETTERS
from annotations.selectors import review as selectors
from annotations.selectors import visibility
from annotations.services.errors import ConflictError, DomainError
from annotations.services.review import content_normalise, item_adjudicate
from annotations.views.content import posted_content

PAGE = "review/adjudicate.html"
WORD = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) segments turning `old` into `new` word by word: op is same, del or ins."""
    a, b = WORD.findall(old or ""), WORD.findall(new or "")
    segments: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            segments.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            segments.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            segments.append(("ins", "".join(b[j1:j2])))
    return segments


def content_diff(original: dict, proposed: dict) -> dict:
    """A proposed content against the original, per field, for highlighting in the page."""
    old, new = content_normalise(original), content_normalise(proposed)
    rows = []
    for position in range(max(len(old["options"]), len(new["options"]))):
        before = old["options"][position] if position < len(old["options"]) else ""
        after = new["options"][position] if position < len(new["options"]) else ""
        rows.append(
            {
                "letter": LETTERS[position],
                "segments": word_diff(before, after),
                "changed": before != after,
                "answer": new["answer"] == LETTERS[position],
            }
        )
    return {
        "question": word_diff(old["question"], new["question"]),
        "question_changed": old["question"] != new["question"],
        "options": rows,
        "answer": new["answer"],
        "answer_changed": old["answer"] != new["answer"],
    }


def review_card(review: Review | None, original: dict, label: str) -> dict | None:
    if review is None:
        return None
    card = {"review": review, "label": label}
    if review.verdict == "edit":
        card["diff"] = content_diff(original, review.content or {})
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


class AdjudicateForm(forms.Form):
    choice = forms.ChoiceField(choices=AdjudicationChoice.choices)
    version = forms.IntegerField(min_value=1)
    reject = forms.BooleanField(required=False)
    question = forms.CharField(required=False)
    answer = forms.CharField(required=False, max_length=1)
    comment = forms.CharField(required=False)


def _context(page: selectors.AdjudicationPage, **extra) -> dict:
    original = page.item.content()
    return {
        "page": page,
        "item": page.item,
        "cards": [
            review_card(page.review_a, original, "A"),
            review_card(page.review_b, original, "B"),
        ],
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
    page = Paginator(selectors.adjudication_queue(request.user), 50).get_page(
        request.GET.get("page")
    )
    return render(request, "review/adjudication_list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@role_required(ADJUDICATOR)
def adjudicate(request: HttpRequest, pk: int) -> HttpResponse:
    page = selectors.adjudication_page(request.user, pk)
    if request.method == "GET":
        return _render(request, _context(page))
    form = AdjudicateForm(request.POST)
    if not form.is_valid():
        return _render(
            request, _context(page, error=_("Choose A, B or a new version.")), status=400
        )
    data = form.cleaned_data
    content = posted_content(request.POST, question=data["question"], answer=data["answer"])
    try:
        item_adjudicate(
            item=page.item,
            adjudicator=request.user,
            choice=data["choice"],
            version=data["version"],
            content=content,
            reject=data["reject"],
            comment=data["comment"],
        )
    except ConflictError as error:
        return _render(request, _context(page, error=str(error), conflict=True), status=409)
    except DomainError as error:
        return _render(request, _context(page, error=str(error)), status=400)
    following = selectors.adjudication_queue(request.user).first()
    if following is None:
        return redirect("adjudication") if not request.htmx else _done(request)
    url = reverse("adjudicate", args=[following.pk])
    if not request.htmx:
        return redirect(url)
    page = selectors.adjudication_page(request.user, following.pk)
    return _render(request, _context(page), url=url)


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
