"""Background work of every kind on one page: jobs (import, degradation, triage), model runs
and release builds, newest first, in one query per page whatever their number."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Concat
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from annotations.models import Job, JobChunk, JobStatus, Release, Run, RunChunk, RunKind
from annotations.services.recovery import is_stale, stale_seconds

PER_PAGE = 50
STATES = ("queued", "running", "stuck", "failed", "done", "cancelled")
RETRYABLE_JOBS = ("degrade", "triage", "import")  # an import only while its upload is kept
COLUMNS = (
    "source",
    "row_id",
    "kind",
    "label",
    "bench",
    "state",
    "done_steps",
    "total_steps",
    "chunks_done",
    "chunks_total",
    "tries",
    "recovered",
    "beat",
    "alive",
    "created",
    "note",
    "upload",
)


@dataclass
class WorkRow:
    """One line of the Jobs page."""

    source: str  # job, run or release
    row_id: int
    kind: str
    label: str  # a run's label, a release's name and version
    bench: str | None
    state: str  # queued, running, done, failed or cancelled (a release's states mapped)
    done_steps: int
    total_steps: int
    chunks_done: int
    chunks_total: int
    tries: int
    recovered: int
    beat: datetime | None
    alive: datetime  # the last sign of life: its heartbeat, or its creation before any
    created: datetime
    note: str
    upload: str  # an import's kept upload, "" for other work
    stuck: bool = False
    beat_seconds: int | None = None

    @property
    def heartbeat_at(self) -> datetime:  # what `recovery.is_stale` reads
        return self.alive

    @property
    def percent(self) -> float:
        if self.state == "done":
            return 100.0
        return 100.0 * self.done_steps / self.total_steps if self.total_steps else 0.0

    @property
    def retryable(self) -> bool:
        return _retryable(self.source, self.kind, self.state, self.upload)


def job_retryable(job: Job) -> bool:
    """Whether a failed job is offered a retry (on the Jobs page and the job's own page)."""
    upload = (job.params or {}).get("path") or "" if job.kind == "import" else ""
    return _retryable("job", job.kind, job.status, upload)


def _retryable(source: str, kind: str, state: str, upload: str) -> bool:
    if state != "failed" or (source == "job" and kind not in RETRYABLE_JOBS):
        return False
    # An import refused for bad input keeps no upload: its file is fixed and uploaded again.
    return kind != "import" or Path(upload).is_file()


def _count(rows: QuerySet, column: str = "pk", how=Count) -> Subquery:
    total = rows.order_by().values("job").annotate(n=how(column)).values("n")
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def _jobs() -> QuerySet:
    chunks = JobChunk.objects.filter(job=OuterRef("pk"))
    return Job.objects.annotate(
        source=Value("job"),
        row_id=F("pk"),
        label=Value(""),
        bench=Coalesce(
            F("benchmark__name"), KeyTextTransform("name", "params"), output_field=CharField()
        ),
        state=F("status"),
        done_steps=F("done"),
        total_steps=F("total"),
        chunks_done=_count(chunks.filter(status=JobStatus.DONE)),
        chunks_total=_count(chunks),
        tries=F("attempts"),
        recovered=F("recoveries") + _count(chunks, "recoveries", Sum),
        beat=F("heartbeat_at"),
        alive=Coalesce("heartbeat_at", "created_at"),
        created=F("created_at"),
        note=F("message"),
        upload=Coalesce(KeyTextTransform("path", "params"), Value(""), output_field=CharField()),
    )


def _run_chunks(rows: QuerySet, column: str = "pk", how=Count) -> Subquery:
    total = rows.order_by().values("run").annotate(n=how(column)).values("n")
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def _runs() -> QuerySet:
    chunks = RunChunk.objects.filter(run=OuterRef("pk"))
    return Run.objects.exclude(kind=RunKind.HUMAN).annotate(
        source=Value("run"),
        row_id=F("pk"),
        bench=F("benchmark__name"),
        state=F("status"),
        done_steps=F("completed"),
        total_steps=F("total"),
        chunks_done=_run_chunks(chunks.filter(status=JobStatus.DONE)),
        chunks_total=_run_chunks(chunks),
        tries=F("attempts"),
        recovered=F("recoveries") + _run_chunks(chunks, "recoveries", Sum),
        beat=F("heartbeat_at"),
        alive=Coalesce("heartbeat_at", "created_at"),
        created=F("created_at"),
        note=F("error"),
        upload=Value(""),
    )


def _releases() -> QuerySet:
    return Release.objects.annotate(
        source=Value("release"),
        row_id=F("pk"),
        kind=Value("release"),
        label=Concat("name", Value(" "), "version", output_field=CharField()),
        bench=F("benchmark__name"),
        state=Case(
            When(status="building", then=Value("running")),
            When(status="published", then=Value("done")),
            default=F("status"),
            output_field=CharField(),
        ),
        done_steps=F("progress"),
        total_steps=F("item_count"),
        chunks_done=Value(0),
        chunks_total=Value(0),
        tries=F("attempts"),
        recovered=F("recoveries"),
        beat=F("heartbeat_at"),
        alive=Coalesce("heartbeat_at", "created_at"),
        created=F("created_at"),
        note=F("error"),
        upload=Value(""),
    )


def _in_state(rows: QuerySet, state: str, now: datetime) -> QuerySet:
    if state == "stuck":
        return rows.filter(state="running", alive__lt=now - timedelta(seconds=stale_seconds()))
    return rows.filter(state=state) if state else rows


def background_work(*, state: str = "", now: datetime | None = None) -> QuerySet:
    """Every job, model run (not human baselines) and release build as rows of COLUMNS,
    newest first; `state` is one of STATES ("stuck": running, and no heartbeat within the
    reaper's limit; work no worker has taken yet counts from its creation)."""
    now = now or timezone.now()
    parts = [
        _in_state(rows, state, now).order_by().values(*COLUMNS)
        for rows in (_jobs(), _runs(), _releases())
    ]
    return parts[0].union(*parts[1:], all=True).order_by("-created", "source", "-row_id")


def background_page(*, state: str = "", number: int | str = 1) -> Page:
    """One page of `background_work`, each row a WorkRow with its "stuck" mark."""
    now = timezone.now()
    page = Paginator(background_work(state=state, now=now), PER_PAGE).get_page(number)
    rows = []
    for values in page.object_list:
        row = WorkRow(**values)
        row.stuck = row.state == "running" and is_stale(row, now=now)
        if row.beat is not None:
            row.beat_seconds = max(0, int((now - row.beat).total_seconds()))
        rows.append(row)
    page.object_list = rows
    return page


def background_work_get(source: str, pk: int) -> Job | Run | Release:
    """The job, model run or release a row of the Jobs page names (404 otherwise)."""
    if source == "job":
        return get_object_or_404(Job, pk=pk)
    if source == "run":
        return get_object_or_404(Run.objects.exclude(kind=RunKind.HUMAN), pk=pk)
    if source == "release":
        return get_object_or_404(Release, pk=pk)
    raise Http404


def job_chunks(job: Job) -> list[JobChunk]:
    """The chunks of a job, in order (for its page)."""
    return list(job.chunks.order_by("number"))
