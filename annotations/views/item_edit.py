"""A curator's direct correction of an item (question, hint, options, answer): a new revision,
saved only over the version the curator saw."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from annotations.access import CURATOR, role_required
from annotations.forms import ItemEditForm
from annotations.models import Item
from annotations.models.item import LETTERS
from annotations.selectors import visibility
from annotations.services import review as review_services
from annotations.services.errors import ConflictError, DomainError
from annotations.services.item_content import label_set
from annotations.views.case_panel import case_panel_context
from annotations.views.content import kind_draft, posted_content, posted_item_content

PAGE = "annotations/item_edit.html"


def _draft(content: dict, note: str = "") -> dict:
    """What the form shows of a typed content: its rows as typed, lettered in order."""
    options = list(content.get("options") or [])
    return {
        "question": content.get("question", ""),
        "hint": content.get("hint", ""),
        "options": list(zip(LETTERS, options, strict=False)) or [("A", ""), ("B", "")],
        "answer": content.get("answer", ""),
        "note": note,
    }


def _saved(item: Item) -> dict:
    """What the form shows of the item as saved: its non-empty options (an imported item may
    carry empty trailing columns), under the letters the answer refers to."""
    return {
        "question": item.question,
        "hint": item.hint,
        "options": item.lettered_options,
        "answer": item.answer,
        "note": "",
    }


def _item(request: HttpRequest, pk: int) -> Item:
    queryset = Item.objects.select_related("benchmark").prefetch_related("item_images__image")
    item = visibility.get_item_for_user_or_404(request.user, pk, queryset)
    # The form shows the gold answer.
    visibility.check_gold_visible(request.user, item.benchmark_id)
    return item


def _page(request, item: Item, *, draft: dict, version: int, status: int = 200, **extra):
    # A report, label or box item's form shows what was posted, else the item as saved.
    draft["kind"] = kind_draft(item, post=request.POST if request.method == "POST" else None)
    context = {
        "item": item,
        "draft": draft,
        "label_choices": label_set(item) if item.kind == "label" else [],
        "version": version,
        "editable": item.status in review_services.EDITABLE_STATUSES,
        # A case's item is corrected with its case in view: the CT (a box is redrawn there and
        # "Use the box selected in the viewer" fills the form), the endoscopy and the reports.
        # The curator sees the gold (`_item` checked it) and every reviewer's boxes.
        "case_panel": case_panel_context(request, item, gold=True, others_visible=True),
        **extra,
    }
    return render(request, PAGE, context, status=status)


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def item_edit(request: HttpRequest, pk: int) -> HttpResponse:
    item = _item(request, pk)
    if request.method == "GET":
        return _page(request, item, draft=_saved(item), version=item.version)
    form = ItemEditForm(request.POST)
    if not form.is_valid():
        # What was typed stays in the form, with what is wrong with it.
        post = request.POST
        typed = posted_content(
            post, question=post.get("question", ""), answer=post.get("answer", ""),
            hint=post.get("hint", ""),
        )  # fmt: skip
        problems = " ".join(
            f"{form.fields[name].label or name}: {message}" if name in form.fields else message
            for name, messages_ in form.errors.items()
            for message in messages_
        )
        return _page(
            request,
            item,
            draft=_draft(typed, post.get("note", "")),
            version=form.cleaned_data.get("version") or item.version,
            status=400,
            error=_("The form could not be saved. %(problems)s") % {"problems": problems},
        )
    data = form.cleaned_data
    if item.kind == "mcq":
        content = posted_content(
            request.POST, question=data["question"], answer=data["answer"], hint=data["hint"]
        )
    else:
        content = posted_item_content(
            item, request.POST, question=data["question"], answer=data["answer"]
        )
    try:
        version = review_services.item_edit(
            item=item,
            user=request.user,
            version=data["version"],
            content=content,
            note=data["note"],
        )
    except ConflictError as error:
        # Nothing typed is lost: the draft stays in the form, beside what the item now says.
        # Saving it again is a deliberate decision over the version now shown.
        current = _item(request, pk)
        return _page(
            request,
            current,
            draft=_draft(content, data["note"]),
            version=current.version,
            status=409,
            error=str(error),
            conflict=True,
        )
    except DomainError as error:
        return _page(
            request,
            item,
            draft=_draft(content, data["note"]),
            version=data["version"],
            status=400,
            error=str(error),
        )
    messages.success(request, _("Saved as version %(version)s.") % {"version": version})
    return redirect("item", pk=item.pk)
