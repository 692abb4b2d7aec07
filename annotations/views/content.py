"""The item content an edit form posts: question, options in their order, and the answer."""

from __future__ import annotations

import difflib
import re

from django.http import QueryDict

from annotations.models import Item, ItemRevision
from annotations.models.item import LETTERS
from annotations.services.review import content_normalise

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


def version_change(item: Item, seen: int) -> dict | None:
    """What changed in the item since version `seen` (a stale decision shows it), or None."""
    if seen == item.version:
        return None
    before = ItemRevision.objects.filter(item=item, version=seen).values_list("content", flat=True)
    original = before.first()
    if original is None:
        return None
    return {"seen": seen, "now": item.version, "diff": content_diff(original, item.content())}
