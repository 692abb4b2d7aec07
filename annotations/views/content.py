"""The item content an edit form posts (per item kind), drafts kept on a refusal, and diffs."""

from __future__ import annotations

import difflib
import re

from django.http import QueryDict

from annotations.models import Item, ItemKind, ItemRevision
from annotations.models.item import LETTERS
from annotations.services.item_content import guess_kind
from annotations.services.review import content_normalise

BOX_FIELDS = ("x0", "y0", "z0", "x1", "y1", "z1")
IMAGE_BOX_FIELDS = ("x0", "y0", "x1", "y1")  # a box on an image (a target without a CT phase)

WORD = re.compile(r"\s+|[^\s]+")


def posted_answer(post: QueryDict, fallback: str) -> str:
    """The letter of the checked option row (`answer_pick`, its position among the rows) once
    empty rows are dropped, as the saved content drops them; `fallback` (the form's `answer`)
    when no row is checked. A checked empty row gives '' (refused as no answer).

    Letters by row position would shift past an empty row and silently name another option.
    """
    options = post.getlist("options")
    pick = post.get("answer_pick", "")
    if not pick.isdigit() or int(pick) >= len(options):
        return fallback
    position = int(pick)
    if not options[position].strip():
        return ""
    kept = sum(1 for option in options[:position] if option.strip())
    return LETTERS[kept] if kept < len(LETTERS) else ""


def posted_content(post: QueryDict, *, question: str, answer: str, hint: str | None = None):
    """The proposed content of an edit form (`hint` only where the form edits it)."""
    content = {
        "question": question,
        "options": post.getlist("options"),
        "answer": posted_answer(post, answer),
    }
    if hint is not None:
        content["hint"] = hint
    return content


def posted_item_content(item: Item, post: QueryDict, *, question: str, answer: str) -> dict:
    """The proposed content of an edit form for the item's kind (see `services.item_content`)."""
    if item.kind == ItemKind.MCQ:
        return posted_content(post, question=question, answer=answer)
    if item.kind in (ItemKind.OPEN, ItemKind.RETRIEVAL):
        return {"reference": post.get("reference", "")}
    if item.kind == ItemKind.LABEL:
        return {"answer": post.get("label", "")}
    if not (item.target or {}).get("phase"):
        return {"box": [post.get(name, "").strip() for name in IMAGE_BOX_FIELDS]}
    return {"voxel": [post.get(name, "").strip() for name in BOX_FIELDS]}


def kind_draft(item: Item, *, content: dict | None = None, post: QueryDict | None = None) -> dict:
    """What a kind's edit form shows: the posted values (a refusal keeps them), a proposed
    content, or the item as it is."""
    on_image = not (item.target or {}).get("phase")
    fields = IMAGE_BOX_FIELDS if on_image else BOX_FIELDS
    if post is not None:
        voxel = [post.get(name, "") for name in fields]
        reference, label = post.get("reference", ""), post.get("label", "")
    else:
        content = content if content is not None else item.content()
        target = content.get("target") or {}
        voxel = list(target.get("box" if on_image else "voxel") or [""] * len(fields))
        reference, label = content.get("reference", ""), content.get("answer", "")
    return {
        "reference": reference,
        "label": label,
        "voxel": list(zip(fields, voxel, strict=False)),
        "on_image": on_image,
    }


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


def content_diff(original: dict, proposed: dict, kind: str | None = None) -> dict:
    """A proposed content against the original, per field, for highlighting in the page."""
    kind = kind or guess_kind(original)
    old, new = content_normalise(original, kind), content_normalise(proposed, kind)
    if kind != ItemKind.MCQ:
        return _kind_diff(kind, old, new)
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
        "kind": ItemKind.MCQ,
        "question": word_diff(old["question"], new["question"]),
        "question_changed": old["question"] != new["question"],
        "options": rows,
        "answer": new["answer"],
        "answer_changed": old["answer"] != new["answer"],
    }


def _kind_diff(kind: str, old: dict, new: dict) -> dict:
    if kind in (ItemKind.OPEN, ItemKind.RETRIEVAL):
        return {
            "kind": ItemKind.OPEN,
            "reference": word_diff(old["reference"], new["reference"]),
            "changed": old["reference"] != new["reference"],
        }
    if kind == ItemKind.LABEL:
        before, after = old["answer"], new["answer"]
    else:
        before = (old["target"] or {}).get("voxel") or (old["target"] or {}).get("box")
        after = (new["target"] or {}).get("voxel") or (new["target"] or {}).get("box")
    return {"kind": kind, "before": before, "after": after, "changed": before != after}


def version_change(item: Item, seen: int) -> dict | None:
    """What changed in the item since version `seen` (a stale decision shows it), or None."""
    if seen == item.version:
        return None
    before = ItemRevision.objects.filter(item=item, version=seen).values_list("content", flat=True)
    original = before.first()
    if original is None:
        return None
    diff = content_diff(original, item.content(), item.kind)
    return {"seen": seen, "now": item.version, "diff": diff}
