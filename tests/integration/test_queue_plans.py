"""The queues' query plans on PostgreSQL at 200k items, straight after `seed_load`.

No manual `ANALYZE`: the services that write in bulk refresh the statistics themselves, and
every queue reads one range of an index in its own order, so no plan sorts a whole queue. The
timings are measured by `bench/review_load.py` (and in docs/performance.md), not asserted here.
"""

from __future__ import annotations

import os
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings

from annotations.models import Item, ItemStatus, Run
from annotations.selectors.review import (
    AfterInQueue,
    adjudication_queue,
    baseline_queue,
    open_assignments,
    queue_next,
)
from annotations.selectors.triage import order_queue_by_suspicion
from annotations.services.human_baseline import human_answer_submit, human_baseline_open
from annotations.services.review import review_submit
from annotations.services.triage import triage_setting_update
from tests.factories import make_personas

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ITEMS = int(os.environ.get("QUEUE_PLAN_ITEMS", "200000"))
REVIEWERS = 20


def plan(queryset) -> str:
    return queryset.explain()


def assert_index_range(text: str, *indexes: str) -> None:
    assert any(f"using {index} on" in text for index in indexes), text
    # The queue's own tables (the visibility scope may read a tiny table whole).
    assert not re.search(r"Seq Scan on annotations_(item|assignment|prediction)\s", text), text
    # A sort over a handful of rows is harmless; over a queue it is the 11-minute query.
    for rows in re.findall(r"Sort[^\n]*rows=(\d+)", text):
        assert int(rows) < 1000, text


def test_the_queues_read_one_index_range_at_200k_items():
    with override_settings(DEBUG=True):
        call_command("seed_load", "plans", "--items", str(ITEMS), "--reviewers", str(REVIEWERS))
    people = make_personas()
    reviewer = get_user_model().objects.get(username="plans-r1")
    rows = order_queue_by_suspicion(open_assignments(reviewer).filter(pair=False))
    first = queue_next(reviewer)
    assert first is not None
    assert_index_range(plan(rows[:1]), "assignment_open_queue")
    assert_index_range(plan(rows.filter(AfterInQueue(first.pk))[:1]), "assignment_open_queue")
    pairs = order_queue_by_suspicion(open_assignments(reviewer).filter(pair=True))
    assert_index_range(plan(pairs[:1]), "assignment_open_queue")

    # Suspects first: the order is still the stored rank, read from the same index.
    benchmark = first.item.benchmark
    triage_setting_update(benchmark=benchmark, suspects_first=True)
    assert_index_range(plan(rows.filter(AfterInQueue(first.pk))[:1]), "assignment_open_queue")

    # Two reviewers disagree on a few items: the adjudication queue reads the disputed ones.
    for item in Item.objects.filter(benchmark=benchmark).order_by("source_index")[:3]:
        a, b = (row.reviewer for row in item.assignments.order_by("slot"))
        review_submit(item=item, reviewer=a, version=1, verdict="accept")
        review_submit(item=item, reviewer=b, version=1, verdict="reject", reason="ambiguous")
    assert Item.objects.filter(status=ItemStatus.DISPUTED).count() == 3
    adjudication = adjudication_queue(people["adjudicator"])
    assert adjudication.first() is not None
    # Through the disputed items only (by age, or by status then sorted: a few rows either way).
    text = plan(adjudication[:1])
    by_status = re.search(
        r"on annotations_item\s.*\n\s+Index Cond: \(\(status\)::text = 'disputed'", text
    )
    assert by_status or "using item_dispute_queue on" in text, text
    assert_index_range(text, "item_dispute_queue", "annotations_item_pkey")

    clinician = people["reviewer"]
    run = human_baseline_open(benchmark=benchmark, clinician=clinician, opened_by=clinician)
    for item in Item.objects.filter(benchmark=benchmark).order_by("source_index")[10:12]:
        human_answer_submit(run=run, item=item, user=clinician, letter="A")
    run = Run.objects.get(pk=run.pk)
    following = baseline_queue(run, after_last=True)
    assert following.first().source_index == 12
    assert_index_range(plan(following[:1]), "item_unique_index_per_benchmark")
