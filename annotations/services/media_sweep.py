"""No patient file outlives its job: the sweep of what imports leave under MEDIA_ROOT.

An import keeps two kinds of raw files while it runs: its upload (a Gastric-X zip holds raw
DICOM with names, record numbers and institutions) under `uploads/<token>/`, and its attempt's
folder `imports/job-<id>-<attempt>/` (staged images, the zip's extracted files). The task removes
both right after the commit that ends the job; a worker that dies in between would leave them
under a job that is done, which nothing else looks at. So the reaper (Celery beat every
JOB_REAP_SECONDS, and each worker at start) also runs `media_sweep`:

- an attempt's folder goes as soon as its job is no longer queued or running (done, failed,
  cancelled, or gone), with what the attempt placed and never committed;
- a done job's upload goes at once; a failed or cancelled job's upload, kept for a retry, goes
  UPLOAD_EXPIRY_HOURS after the job ended (a retry then asks for the file again);
- anything else in those folders that no job names (an upload kept across a form error, the
  staging folder of an import run outside a job) goes once it is UPLOAD_EXPIRY_HOURS old;
- a volumes folder that no committed volume uses and no open import is writing goes once it is
  UPLOAD_EXPIRY_HOURS old.

Each removal is reported (logged as a warning, and returned).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from annotations.models import Job, JobStatus, Volume
from annotations.services.cases import attempt_volumes_folder, import_attempt_discard
from annotations.services.images import IMPORTS_FOLDER
from annotations.services.volume_files import VOLUMES_FOLDER

log = logging.getLogger(__name__)

UPLOADS_FOLDER = "uploads"
_OPEN = (JobStatus.QUEUED, JobStatus.RUNNING)


def upload_expiry() -> timedelta:
    return timedelta(hours=float(getattr(settings, "UPLOAD_EXPIRY_HOURS", 24)))


@dataclass
class SweepReport:
    """What one sweep removed: paths relative to MEDIA_ROOT, with why."""

    removed: list[tuple[str, str]] = field(default_factory=list)

    def add(self, path: Path, why: str) -> None:
        self.removed.append((str(path.relative_to(settings.MEDIA_ROOT)), why))


def _older_than(path: Path, age: timedelta) -> bool:
    try:
        return time.time() - path.stat().st_mtime > age.total_seconds()
    except FileNotFoundError:
        return False


def _job_of_attempt(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) == 3 and parts[0] == "job" and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1])
    return None


def _sweep_attempts(media: Path, report: SweepReport, open_notes: set[str]) -> None:
    folder = media / IMPORTS_FOLDER
    if not folder.is_dir():
        return
    expiry = upload_expiry()
    entries = [entry for entry in folder.iterdir() if entry.is_dir()]
    job_ids = {pk for entry in entries if (pk := _job_of_attempt(entry.name)) is not None}
    statuses = dict(Job.objects.filter(pk__in=job_ids).values_list("pk", "status"))
    for entry in entries:
        pk = _job_of_attempt(entry.name)
        kept = statuses.get(pk) in _OPEN if pk is not None else not _older_than(entry, expiry)
        if kept:
            # An import at work: the volumes folder it is writing is not an orphan.
            noted = attempt_volumes_folder(entry)
            if noted:
                open_notes.add(noted)
            continue
        import_attempt_discard(entry)
        report.add(entry, "job ended" if pk is not None else "expired")


def _sweep_uploads(media: Path, report: SweepReport) -> None:
    folder = media / UPLOADS_FOLDER
    if not folder.is_dir():
        return
    jobs: dict[Path, tuple[str, datetime | None]] = {}
    for path, status, finished_at in Job.objects.filter(kind="import").values_list(
        "params__path", "status", "finished_at"
    ):
        if path:
            jobs[Path(path).parent] = (status, finished_at)
    expired = timezone.now() - upload_expiry()
    for entry in folder.iterdir():
        found = jobs.get(entry)
        if found is None:
            if _older_than(entry, upload_expiry()):
                _remove(entry)
                report.add(entry, "expired")
            continue
        status, finished_at = found
        if status in _OPEN:
            continue
        if status == JobStatus.DONE:
            _remove(entry)
            report.add(entry, "job done")
        elif finished_at is None or finished_at < expired:
            _remove(entry)
            report.add(entry, "expired")


def _sweep_volumes(media: Path, report: SweepReport, open_notes: set[str]) -> None:
    folder = media / VOLUMES_FOLDER
    if not folder.is_dir():
        return
    used = {
        Path(path).parts[1]
        for path in Volume.objects.values_list("cache_path", flat=True)
        if path and len(Path(path).parts) > 1
    }
    # A note names the import's folder (volumes/<import>) or one case of it (…/<case>).
    writing = {Path(note).parts[1] for note in open_notes if len(Path(note).parts) > 1}
    for entry in folder.iterdir():
        if entry.name in used or entry.name in writing:
            continue
        if _older_than(entry, upload_expiry()):
            _remove(entry)
            report.add(entry, "no volume uses it")


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def media_sweep() -> SweepReport:
    """Remove (and report) the raw files of ended imports and the orphans under MEDIA_ROOT."""
    media = Path(settings.MEDIA_ROOT)
    report = SweepReport()
    open_notes: set[str] = set()
    _sweep_attempts(media, report, open_notes)
    _sweep_uploads(media, report)
    _sweep_volumes(media, report, open_notes)
    for path, why in report.removed:
        log.warning("media sweep: removed %s (%s)", path, why)
    return report
