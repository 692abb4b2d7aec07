"""The item content an edit form posts: question, options in their order, and the answer."""

from __future__ import annotations

from django.http import QueryDict

from annotations.models.item import LETTERS


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
