"""A Gastric-X import shared by two real workers, a case at a time: both take cases, and the
benchmark holds every case once, as a one-worker import would (tests/cases/test_import_chunked.py
compares it with a one-piece import). No timing is asserted: `bench/gastricx_import.py`
measures the speed-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.models import Case, Job, JobChunk, JobStatus, Volume
from annotations.services.import_jobs import import_start, upload_store
from tests.cases.builders import write_case, zip_tree
from tests.integration.conftest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

CASES = 6
WORKER_ARGS = ("--pool", "threads", "--concurrency", "1")  # one case at a time per worker


class _Upload:
    """What the import form hands to `upload_store`: a named file on disk."""

    def __init__(self, path: Path) -> None:
        self.name, self.path = path.name, path

    def chunks(self):
        yield self.path.read_bytes()


def _zip(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for number in range(CASES):
        write_case(tree, f"GX-P-{number:04d}", seed=number)
    return zip_tree(tree, tmp_path / "cases.zip")


def _workers_ready(count: int) -> bool:
    from clinreview.celery import app

    return len(app.control.ping(timeout=1.0) or []) >= count


def test_two_workers_take_the_cases_of_one_import(celery_worker_process, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"  # read by the workers started below
    from tests.factories import make_personas

    curator = make_personas()["curator"]
    workers = [celery_worker_process(*WORKER_ARGS) for _ in range(2)]
    wait_for(lambda: _workers_ready(2), timeout=120, interval=0.5)
    stored = upload_store(upload=_Upload(_zip(tmp_path)))

    job = import_start(stored=stored, family="gastricx", name="gx-parallel", user=curator)
    job = wait_for(
        lambda: Job.objects.filter(
            pk=job.pk, status__in=[JobStatus.DONE, JobStatus.FAILED]
        ).first(),
        timeout=240,
    )

    assert job.status == JobStatus.DONE, job.message
    assert (job.done, job.total) == (CASES, CASES)
    chunks = JobChunk.objects.filter(job=job)
    assert chunks.count() == CASES
    assert set(chunks.values_list("status", flat=True)) == {JobStatus.DONE}
    assert set(chunks.values_list("attempts", flat=True)) == {1}  # each case taken once
    took = {chunk.result["worker"].rsplit(":", 1)[1] for chunk in chunks}
    assert took == {str(worker.process.pid) for worker in workers}  # both workers took cases
    cases = Case.objects.filter(benchmark__name="gx-parallel")
    assert sorted(cases.values_list("case_id", flat=True)) == [
        f"GX-P-{n:04d}" for n in range(CASES)
    ]
    assert Volume.objects.filter(case__in=cases).count() == 4 * CASES
    media = Path(settings.MEDIA_ROOT)
    wait_for(lambda: not stored.path.parent.exists(), timeout=30)
    assert not any((media / "imports").iterdir())
