"""Background work that survives the death of its whole worker.

A task claims its row with a conditional UPDATE that also takes a lease (`attempts` + 1) and
stamps `heartbeat_at`; while it works, `heartbeat(lease)` beats the row from a daemon thread.
When a worker dies (SIGKILL of the whole process group, a lost machine), the beats stop. The
reaper (`reap_stale`: Celery beat runs it every REAP_SECONDS, and every worker once at start)
puts rows whose heartbeat is older than STALE_SECONDS back in the queue and sends their task
again; the task resumes from what is stored. A queued row whose task message was lost with its
worker (the file-system broker forgets a message once a worker took it) is sent again after
RESEND_SECONDS: a duplicate message is harmless, since only one claim can win.

Every final write of a task goes through `lease_update`, conditional on the lease: a worker
that was only slow, and was replaced, can never overwrite its successor's work.

Each kind of work registers a `Kind` (in its tasks module): which rows it covers, which are
running or waiting, how a running row is put back in the queue, and how its task is sent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Model, Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.selectors.jobs import stale_seconds

log = logging.getLogger(__name__)


def _seconds(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def heartbeat_seconds() -> float:
    return _seconds("JOB_HEARTBEAT_SECONDS", 10)


def resend_seconds() -> float:
    return _seconds("JOB_RESEND_SECONDS", 300)


@dataclass(frozen=True)
class Kind:
    """One kind of background work the reaper looks after."""

    name: str
    rows: Callable[[], QuerySet]  # every row of this kind (a Leased model)
    running: Q  # rows a worker has claimed
    waiting: Q  # rows waiting for a worker
    requeue: dict[str, Any]  # values that put a running row back among the waiting ones
    send: Callable[[int], Any]  # sends the row's task


_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> None:
    _KINDS[kind.name] = kind


def registered_kinds() -> dict[str, Kind]:
    return dict(_KINDS)


class LeaseLost(Exception):
    """The row was requeued and claimed by another worker (or deleted): stop working on it."""


@dataclass
class Lease:
    """A worker's claim on one row: writes are conditional on `attempt` still being the row's."""

    model: type[Model]
    pk: int
    attempt: int
    lost: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        """Raise LeaseLost when the heartbeat found the row taken over."""
        if self.lost.is_set():
            raise LeaseLost(f"{self.model.__name__} {self.pk} was taken over by another worker")


def lease_claim(rows: QuerySet, pk: int, **values: Any) -> Lease | None:
    """Claim row `pk` of `rows` (already filtered to the claimable states) with `values`.

    One conditional UPDATE; None when no row changed (another worker has it, or it ended).
    """
    changed = rows.filter(pk=pk).update(
        attempts=F("attempts") + 1, heartbeat_at=timezone.now(), **values
    )
    if not changed:
        return None
    attempt = rows.model._default_manager.filter(pk=pk).values_list("attempts", flat=True).first()
    return Lease(rows.model, pk, attempt or 0)


def lease_update(lease: Lease, **values: Any) -> bool:
    """Write `values` to the leased row only if the lease still holds; False otherwise."""
    return bool(
        lease.model._default_manager.filter(pk=lease.pk, attempts=lease.attempt).update(**values)
    )


@contextmanager
def heartbeat(lease: Lease, *, every: float | None = None) -> Iterator[Lease]:
    """Beat the leased row's `heartbeat_at` from a daemon thread while the block runs.

    The thread has its own database connection, so beats are seen at once by the reaper even
    while the task is inside a transaction. It dies with the process, which is the point.
    """
    stop = threading.Event()
    interval = heartbeat_seconds() if every is None else every
    thread = threading.Thread(
        target=_beat, args=(lease, stop, interval), name=f"heartbeat-{lease.pk}", daemon=True
    )
    thread.start()
    try:
        yield lease
    finally:
        stop.set()
        thread.join(timeout=interval + 5)


def _beat(lease: Lease, stop: threading.Event, interval: float) -> None:
    try:
        while not stop.wait(interval):
            _beat_once(lease)
    finally:
        connection.close()


def _beat_once(lease: Lease) -> None:
    try:
        if lease_update(lease, heartbeat_at=timezone.now()):
            return
        # Only a row that is still there under another lease is lost; a row this connection
        # cannot see (deleted, or not committed yet) says nothing either way.
        current = lease.model._default_manager.filter(pk=lease.pk).values_list(
            "attempts", flat=True
        )
        if current and current[0] != lease.attempt:
            lease.lost.set()
    except Exception:  # a locked or unreachable database: try again at the next beat
        log.warning("heartbeat of %s %s failed", lease.model.__name__, lease.pk, exc_info=True)


@dataclass(frozen=True)
class Reaped:
    kind: str
    pk: int
    action: str  # "requeued" (its worker died) or "resent" (its task message was lost)


def reap_stale(*, now=None) -> list[Reaped]:
    """Requeue running rows whose heartbeat went quiet and resend tasks of forgotten queued rows."""
    now = now or timezone.now()
    reaped: list[Reaped] = []
    for kind in list(_KINDS.values()):
        reaped += _requeue_dead(kind, now)
        reaped += _resend_waiting(kind, now)
    for row in reaped:
        log.warning("recovery: %s %s %s", row.kind, row.pk, row.action)
    return reaped


def _requeue_dead(kind: Kind, now) -> list[Reaped]:
    quiet = Q(heartbeat_at__lt=now - timedelta(seconds=stale_seconds())) | Q(
        heartbeat_at__isnull=True
    )
    reaped = []
    for pk in list(kind.rows().filter(kind.running).filter(quiet).values_list("pk", flat=True)):
        with transaction.atomic():
            changed = (
                kind.rows()
                .filter(kind.running, quiet, pk=pk)
                .update(heartbeat_at=now, recoveries=F("recoveries") + 1, **kind.requeue)
            )
            if changed:
                transaction.on_commit(partial(kind.send, pk))
                reaped.append(Reaped(kind.name, pk, "requeued"))
    return reaped


def _resend_waiting(kind: Kind, now) -> list[Reaped]:
    cutoff = now - timedelta(seconds=resend_seconds())
    waiting = (
        kind.rows()
        .filter(kind.waiting)
        .annotate(last_sent=Coalesce("heartbeat_at", "created_at"))
        .filter(last_sent__lt=cutoff)
    )
    reaped = []
    for pk in list(waiting.values_list("pk", flat=True)):
        with transaction.atomic():
            changed = (
                kind.rows()
                .filter(kind.waiting, pk=pk)
                .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))
                .update(heartbeat_at=now)
            )
            if changed:
                transaction.on_commit(partial(kind.send, pk))
                reaped.append(Reaped(kind.name, pk, "resent"))
    return reaped
