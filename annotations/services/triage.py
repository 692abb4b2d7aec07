"""Triage: compute every item's suspicion score and reasons for a benchmark, and store them.

Built for 100k items: every read is one `values_list` scan of the needed columns, perceptual
hashes are computed from the stored files once and cached (ImageHash), and the results replace
the old ones in one transaction with batched inserts. The signals themselves are pure
(`annotations.scoring.triage`).

As a background job (`TRIAGE_WORK`), hashing the images is the part shared by workers: decoding
each stored image is what grows with a benchmark's images, while the signals over the loaded
columns take seconds at 100k items. The images still to hash are chunks of JOB_TRIAGE_CHUNK
images; the last chunk to end combines the evidence and stores it, whole, as the command does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import FloatField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.models import (
    Assignment,
    Benchmark,
    Family,
    Image,
    ImageHash,
    Item,
    ItemImage,
    Job,
    JobChunk,
    Prediction,
    Review,
    Run,
    RunKind,
    RunStatus,
    Suspicion,
    TriageFlag,
    TriageSetting,
)
from annotations.scoring.triage import (
    ALL_CODES,
    ItemFacts,
    ReviewFacts,
    RunVotes,
    Suspect,
    answerable_without_image,
    broken_items,
    combine,
    duplicate_reasons,
    image_hashes,
    model_consensus,
    near_image_pairs,
    near_question_pairs,
    reads_as_empty,
    reviewer_signals,
)
from annotations.scoring.triage.broken import LETTERS
from annotations.services import dispatch
from annotations.services.errors import DomainError
from annotations.services.jobs import Check, ChunkedWork, PlannedChunk

BATCH = 2000
_PAIR_FIELDS = ("modality", "degradation_type")
HASH_BATCH = 50  # images hashed between two progress writes (a second or two of real frames)
Progress = Callable[[int], None]


@dataclass
class TriageResult:
    suspects: list[Suspect]
    index_of: dict[int, int]  # item id -> source index
    summary: dict[str, Any] = field(default_factory=dict)


# --- image hashes ---------------------------------------------------------------------------


def images_unhashed(benchmark: Benchmark, ids: tuple[int, int] | None = None):
    """The benchmark's images not hashed yet (those with ids in `ids`, both ends included)."""
    images = Image.objects.filter(
        pk__in=ItemImage.objects.filter(item__benchmark=benchmark).values("image_id"),
        hashes__isnull=True,
    )
    if ids is not None:
        images = images.filter(pk__range=ids)
    return images.order_by("pk")


def image_hashes_ensure(
    *,
    benchmark: Benchmark,
    ids: tuple[int, int] | None = None,
    progress: Progress | None = None,
    check: Check | None = None,
) -> int:
    """Hash (from the stored files) every image of the benchmark not hashed yet (with ids in
    `ids`); returns how many were hashed. Idempotent: a hash is computed once per stored image,
    ever. `progress(n)` follows each stored batch; `check()` runs before each batch."""
    missing = list(images_unhashed(benchmark, ids).values_list("pk", "file"))
    for start in range(0, len(missing), HASH_BATCH):
        if check:
            check()
        rows = []
        for pk, name in missing[start : start + HASH_BATCH]:
            try:
                with default_storage.open(name, "rb") as handle:
                    hashes = image_hashes(handle.read())
            except OSError:
                hashes = None
            phash, dhash = hashes or (None, None)
            rows.append(
                ImageHash(
                    image_id=pk,
                    phash=f"{phash:016x}" if phash is not None else "",
                    dhash=f"{dhash:016x}" if dhash is not None else "",
                )
            )
        ImageHash.objects.bulk_create(rows, ignore_conflicts=True)
        if progress:
            progress(len(rows))
    return len(missing)


# --- loading --------------------------------------------------------------------------------


def _load_items(benchmark: Benchmark) -> tuple[list[ItemFacts], dict[int, int], dict[int, int]]:
    """(facts, item id -> source index, item id -> version), images attached."""
    images: dict[int, list[str]] = {}
    rows = (
        ItemImage.objects.filter(item__benchmark=benchmark)
        .order_by("item_id", "position")
        .values_list("item_id", "image__sha256")
    )
    for item_id, sha in rows.iterator(chunk_size=BATCH):
        images.setdefault(item_id, []).append(sha)
    max_letters = 5 if benchmark.family == Family.MEDQDEG else len(LETTERS)
    facts, index_of, version_of = [], {}, {}
    columns = ("pk", "source_index", "question", "options", "answer", "split", "task")
    item_rows = (
        Item.objects.filter(benchmark=benchmark)
        .order_by()
        .values_list(*columns, "extra__gt", "clean_twin_id", "case_id", "version", *_PAIR_FIELDS)
    )
    for row in item_rows.iterator(chunk_size=BATCH):
        pk, index, question, options, answer, split, task, gt, twin, case, version = row[:11]
        modality, degradation_type = row[11:]
        index_of[pk] = index
        version_of[pk] = version
        group = ("case", case) if case else twin or pk
        facts.append(
            ItemFacts(
                key=pk,
                question=question,
                options=tuple("" if o is None else str(o) for o in options or ()),
                answer=answer,
                gt=None if gt is None else str(gt),
                split=split,
                task=task,
                images=tuple(images.get(pk, ())),
                group=group,
                max_letters=max_letters,
                modality=modality,
                degradation_type=degradation_type,
            )
        )
    return facts, index_of, version_of


def _load_runs(benchmark: Benchmark, version_of: dict[int, int]) -> tuple[list, list, list]:
    """(runs with the image, runs without it, run descriptions) as votes on current versions."""
    runs = list(
        Run.objects.filter(benchmark=benchmark, status=RunStatus.DONE)
        .exclude(kind=RunKind.BASELINE)  # a baseline's answer is a rule, not a judgement
        .order_by("pk")
        .values_list("pk", "label", "with_image")
    )
    # Item ids, as the signals' item keys (any Hashable: `scoring.triage.types.Key`).
    answers: dict[int, dict[Hashable, str]] = {pk: {} for pk, _l, _w in runs}
    predictions = Prediction.objects.filter(run_id__in=list(answers), error="").values_list(
        "run_id", "item_id", "item_version", "extracted"
    )
    for run_id, item_id, item_version, extracted in predictions.iterator(chunk_size=BATCH):
        # An answer to an older version of the item may answer a question that no longer exists.
        if version_of.get(item_id) == item_version:
            answers[run_id][item_id] = extracted
    seeing = [RunVotes(pk, label, answers[pk]) for pk, label, with_image in runs if with_image]
    blind = [RunVotes(pk, label, answers[pk]) for pk, label, with_image in runs if not with_image]
    described = [{"id": pk, "label": label, "with_image": w} for pk, label, w in runs]
    return seeing, blind, described


def _load_reviews(benchmark: Benchmark, version_of: dict[int, int]) -> list[ReviewFacts]:
    rows = Review.objects.filter(item__benchmark=benchmark).values_list(
        "item_id", "item_version", "verdict", "seconds_spent", "reason"
    )
    return [
        ReviewFacts(item_id, verdict, seconds, reason)
        for item_id, version, verdict, seconds, reason in rows.order_by().iterator(chunk_size=BATCH)
        if version_of.get(item_id) == version
    ]


def _image_hash_maps(benchmark: Benchmark) -> tuple[dict[Hashable, int], dict[Hashable, int]]:
    """(phash, dhash) by image sha256, the signals' image keys (`ItemFacts.images`)."""
    rows = ImageHash.objects.filter(
        image_id__in=ItemImage.objects.filter(item__benchmark=benchmark).values("image_id")
    ).values_list("image__sha256", "phash", "dhash")
    phashes: dict[Hashable, int] = {}
    dhashes: dict[Hashable, int] = {}
    for sha, phash, dhash in rows.iterator(chunk_size=BATCH):
        if phash:
            phashes[sha] = int(phash, 16)
            dhashes[sha] = int(dhash, 16)
    return phashes, dhashes


# --- computing ------------------------------------------------------------------------------


def _usable_letters(item: ItemFacts) -> list[str]:
    options = item.options[: item.max_letters]
    return [LETTERS[i] for i, text in enumerate(options) if text and not reads_as_empty(text)]


def benchmark_triage_compute(
    *, benchmark: Benchmark, progress: Progress | None = None
) -> TriageResult:
    """Every signal over the benchmark, combined; nothing is written except image hashes."""
    started = time.perf_counter()
    image_hashes_ensure(benchmark=benchmark, progress=progress)
    facts, index_of, version_of = _load_items(benchmark)
    seeing, blind, described = _load_runs(benchmark, version_of)
    gold = {item.key: item.answer for item in facts}
    letters = {item.key: _usable_letters(item) for item in facts}
    tasks = {item.key: item.task for item in facts}
    consensus = model_consensus(gold, letters, seeing)
    without_image, by_task = answerable_without_image(gold, letters, tasks, blind)
    phashes, dhashes = _image_hash_maps(benchmark)
    image_pairs = near_image_pairs(phashes, dhashes=dhashes)
    question_pairs = near_question_pairs({item.key: item.question for item in facts})
    duplicates = duplicate_reasons(facts, image_pairs, question_pairs)
    reviews = reviewer_signals(_load_reviews(benchmark, version_of))
    suspects = combine(consensus, without_image, duplicates, broken_items(facts), reviews)
    for suspect in suspects:
        _add_indexes(suspect, index_of)
    summary = _summary(facts, suspects, described, seeing, gold, by_task)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return TriageResult(suspects, index_of, summary)


def _add_indexes(suspect: Suspect, index_of: dict[int, int]) -> None:
    """Evidence names other items by id; clinicians know them by their benchmark index."""
    for reason in suspect.reasons:
        for other in reason.evidence.get("others", ()):
            if "item" in other:
                other["index"] = index_of.get(other["item"])


def _summary(facts, suspects, described, seeing, gold, by_task) -> dict[str, Any]:
    counts = dict.fromkeys(ALL_CODES, 0)
    for suspect in suspects:
        for reason in suspect.reasons:
            counts[reason.code] = counts.get(reason.code, 0) + 1
    accuracy = {}
    for run in seeing:
        answered = [key for key in run.answers if key in gold]
        hits = sum(run.answers[key] == gold[key] for key in answered)
        accuracy[run.key] = round(hits / len(answered), 4) if answered else None
    for run in described:
        run["accuracy"] = accuracy.get(run["id"])
    return {
        "items": len(facts),
        "suspects": len(suspects),
        "by_code": counts,
        "runs": described,
        "tasks": [blind.as_json() for blind in sorted(by_task.values(), key=lambda b: b.task)],
    }


# --- storing --------------------------------------------------------------------------------


@transaction.atomic
def triage_store(*, benchmark: Benchmark, result: TriageResult) -> TriageSetting:
    """Replace the benchmark's suspicions and reason flags with `result`, in batches."""
    # Two recomputations storing at once would each delete, then both insert: one at a time.
    TriageSetting.objects.get_or_create(benchmark=benchmark)
    list(TriageSetting.objects.select_for_update().filter(benchmark=benchmark).values("pk"))
    Suspicion.objects.filter(item__benchmark=benchmark).delete()
    TriageFlag.objects.filter(benchmark=benchmark).delete()
    now = timezone.now()
    suspicions: list[Suspicion] = []
    flags: list[TriageFlag] = []
    for suspect in result.suspects:
        item_id = cast(int, suspect.key)  # the app's item keys are item ids (`_load_items`)
        suspicions.append(
            Suspicion(
                item_id=item_id,
                score=round(suspect.score, 6),
                reasons=[reason.as_json() for reason in suspect.reasons],
                computed_at=now,
            )
        )
        flags.extend(
            TriageFlag(item_id=item_id, benchmark=benchmark, code=r.code, weight=r.weight)
            for r in suspect.reasons
        )
    Suspicion.objects.bulk_create(suspicions, batch_size=BATCH)
    TriageFlag.objects.bulk_create(flags, batch_size=BATCH)
    setting, _created = TriageSetting.objects.get_or_create(benchmark=benchmark)
    setting.summary = result.summary
    setting.computed_at = now
    setting.save(update_fields=["summary", "computed_at"])
    if setting.suspects_first:
        queue_ranks_refresh(benchmark=benchmark)
    return setting


def benchmark_triage(*, benchmark: Benchmark, progress: Progress | None = None) -> TriageResult:
    """Compute and store the triage of a benchmark (the task, the command and the bench)."""
    result = benchmark_triage_compute(benchmark=benchmark, progress=progress)
    triage_store(benchmark=benchmark, result=result)
    return result


@transaction.atomic
def triage_setting_update(*, benchmark: Benchmark, suspects_first: bool) -> TriageSetting:
    """Switch the "review the suspects first" ordering of the benchmark's queue."""
    setting, _created = TriageSetting.objects.select_for_update().get_or_create(benchmark=benchmark)
    changed = setting.suspects_first != suspects_first
    setting.suspects_first = suspects_first
    setting.save(update_fields=["suspects_first"])
    if changed:
        queue_ranks_refresh(benchmark=benchmark)
    return setting


# --- the review queue's order ---------------------------------------------------------------


def queue_ranks(benchmark: Benchmark) -> dict[int, float]:
    """The queue rank of each scored item of the benchmark (item id → minus its suspicion
    score) while it reviews the suspects first; empty otherwise (every rank is then 0)."""
    if not TriageSetting.objects.filter(benchmark=benchmark, suspects_first=True).exists():
        return {}
    rows = Suspicion.objects.filter(item__benchmark=benchmark).values_list("item_id", "score")
    return {item_id: -score for item_id, score in rows.iterator(chunk_size=BATCH)}


def queue_ranks_refresh(*, benchmark: Benchmark) -> int:
    """Store the rank of each assignment of the benchmark (`Assignment.rank`) after its
    suspicions or its suspects-first switch changed: one UPDATE."""
    rows = Assignment.objects.filter(item__benchmark=benchmark)
    if not TriageSetting.objects.filter(benchmark=benchmark, suspects_first=True).exists():
        return rows.exclude(rank=0.0).update(rank=0.0)
    score = Suspicion.objects.filter(item_id=OuterRef("item_id")).values("score")[:1]
    minus = Value(0.0) - Subquery(score, output_field=FloatField())
    return rows.update(rank=Coalesce(minus, Value(0.0)))


# --- the background job -------------------------------------------------------------------


def triage_job_plan(job: Job) -> list[PlannedChunk]:
    """The benchmark's images still to hash, by id, in chunks of JOB_TRIAGE_CHUNK."""
    ids = list(images_unhashed(_job_benchmark(job)).values_list("pk", flat=True))
    size = max(1, int(getattr(settings, "JOB_TRIAGE_CHUNK", 2000)))
    return [
        PlannedChunk({"ids": [part[0], part[-1]]}, total=len(part))
        for part in (ids[start : start + size] for start in range(0, len(ids), size))
    ]


def triage_job_work(job: Job, chunk: JobChunk, progress: Progress, check: Check) -> dict:
    benchmark = _job_benchmark(job)
    ids = tuple(chunk.params["ids"])
    # Images hashed by an earlier attempt count at once.
    progress(max(0, chunk.total - images_unhashed(benchmark, ids).count()))
    hashed = image_hashes_ensure(benchmark=benchmark, ids=ids, progress=progress, check=check)
    return {"hashed": hashed}


def triage_job_finish(job: Job, chunks: list[JobChunk]) -> dict:
    benchmark = _job_benchmark(job)
    result = benchmark_triage(benchmark=benchmark)
    return {"benchmark": benchmark.name, **result.summary}


def _job_benchmark(job: Job) -> Benchmark:
    if job.benchmark is None:
        raise DomainError(_("The benchmark no longer exists."))
    return job.benchmark


TRIAGE_WORK = ChunkedWork(
    kind="triage", plan=triage_job_plan, work=triage_job_work, finish=triage_job_finish
)


def triage_schedule(*, benchmark_id: int, user: Any = None) -> Any:
    """Queue a recomputation after the current transaction commits (runs and imports call this).

    A triage job already waiting for this benchmark is reused: ten runs finishing together
    cause one recomputation, not ten.
    """
    from annotations.models import Job, JobStatus
    from annotations.services.jobs import job_create

    waiting = Job.objects.filter(
        kind="triage", benchmark_id=benchmark_id, status=JobStatus.QUEUED
    ).first()
    if waiting is not None:
        return waiting
    job = job_create(kind="triage", params={}, user=user, benchmark=Benchmark(pk=benchmark_id))
    dispatch.enqueue(dispatch.TRIAGE_BENCHMARK, job.pk)
    return job
