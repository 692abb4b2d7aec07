"""Shared set-ups of the review tests: a benchmark whose items are double-assigned."""

from __future__ import annotations

from annotations.models import Item
from annotations.services.review import assignments_create, review_submit
from tests.factories import make_benchmark, make_item


def assigned_benchmark(people: dict, *, items: int = 2, name: str | None = None, **fields):
    """A benchmark of `items` items, each assigned to reviewer (slot 1) and reviewer2 (slot 2)."""
    benchmark = make_benchmark(name, **fields)
    made = [make_item(benchmark, index=i + 1) for i in range(items)]
    assignments_create(
        benchmark=benchmark,
        reviewers=[people["reviewer"], people["reviewer2"]],
        per_item=2,
        assigned_by=people["curator"],
    )
    return benchmark, [Item.objects.get(pk=item.pk) for item in made]


def both_review(item: Item, people: dict, first: dict, second: dict) -> Item:
    """reviewer submits `first`, reviewer2 submits `second`; returns the reloaded item."""
    review_submit(item=item, reviewer=people["reviewer"], version=item.version, **first)
    review_submit(item=item, reviewer=people["reviewer2"], version=item.version, **second)
    return Item.objects.get(pk=item.pk)


ACCEPT = {"verdict": "accept"}
REJECT = {"verdict": "reject", "reason": "ambiguous"}


def edit(question: str = "Which lesion is visible?", answer: str = "B", options=None) -> dict:
    return {
        "verdict": "edit",
        "content": {
            "question": question,
            "options": options or ["Polyp", "Ulcer", "Normal mucosa", "Bleeding"],
            "answer": answer,
        },
    }
