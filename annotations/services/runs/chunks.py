"""A run's chunks: slices of its items that workers share, one task per chunk.

A chunk is a range of the items' `source_index` within the run's filters, cut when the run is
created, so every worker reads the same items for it. A model's chunk holds a whole number of
rounds of `concurrency` requests, so no round goes out half empty on a steady endpoint: at least
MIN_ROUNDS (between two chunks the worker writes and claims, with nothing in flight), at most
MAX_ROUNDS, and a run is cut in about MIN_CHUNKS chunks until its chunks reach MAX_ROUNDS, so
that two workers share a run of a few hundred items already.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from django.db import transaction

from annotations.models import Run, RunChunk, RunKind, RunStatus
from annotations.selectors.runs import run_items
from annotations.services import dispatch

MIN_ROUNDS = 4
MAX_ROUNDS = 16
MIN_CHUNKS = 16
BASELINE_CHUNK = 500  # baselines answer at once: a chunk only bounds one task's memory
# A chunk's task goes on with the run's next waiting chunks for this long: no wait for the broker
# between chunks (a tenth of a second or more each), and other runs get their turn after it.
CHUNK_TASK_SECONDS = 60


def chunk_size(*, total: int, concurrency: int, kind: str) -> int:
    if kind == RunKind.BASELINE:
        return BASELINE_CHUNK
    concurrency = max(1, concurrency)
    rounds = math.ceil(total / (concurrency * MIN_CHUNKS))
    return concurrency * min(MAX_ROUNDS, max(MIN_ROUNDS, rounds))


def run_chunks_plan(*, run: Run, total: int) -> int:
    """Cut the run's `total` items into chunks (none if it has some already); how many items."""
    if RunChunk.objects.filter(run_id=run.pk).exists():
        return total
    size = chunk_size(total=total, concurrency=run.concurrency, kind=run.kind)
    indexes = run_items(benchmark=run.benchmark, filters=run.filters).values_list(
        "source_index", flat=True
    )
    planned = 0
    batch: list[RunChunk] = []
    for number, members in enumerate(_slices(indexes.iterator(chunk_size=5000), size)):
        batch.append(
            RunChunk(
                run=run,
                number=number,
                first_index=members[0],
                last_index=members[-1],
                size=len(members),
            )
        )
        planned += len(members)
        if len(batch) >= 1000:
            RunChunk.objects.bulk_create(batch)
            batch = []
    RunChunk.objects.bulk_create(batch)
    return planned


def _slices(values: Iterable[int], size: int) -> Iterator[list[int]]:
    members: list[int] = []
    for value in values:
        members.append(value)
        if len(members) == size:
            yield members
            members = []
    if members:
        yield members


def chunks_send(*, run_id: int) -> None:
    """Send (after commit) one task per queued chunk of the run. A chunk already taken makes its
    task a no-op, so sending twice is harmless."""
    chunks = RunChunk.objects.filter(run_id=run_id, status=RunStatus.QUEUED)
    ids = list(chunks.order_by("number").values_list("pk", flat=True))
    if ids:
        transaction.on_commit(lambda: _send(ids))


def _send(chunk_ids: list[int]) -> None:
    for chunk_id in chunk_ids:
        dispatch.send(dispatch.RUN_CHUNK_EXECUTE, chunk_id)
