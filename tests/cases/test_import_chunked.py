"""A Gastric-X import job in a chunk per case (run here in order, in the test's process; real
workers in tests/integration/test_gastricx_parallel.py): the same benchmark as a one-piece
import, progress per case, and all-or-nothing with every case's files removed."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from annotations.formats.errors import RowProblem
from annotations.imaging.chunks import ChunkedVolume
from annotations.models import Benchmark, Box, Case, Item, Job, JobChunk, JobStatus, Volume
from annotations.services.cases import gastricx_import
from annotations.services.jobs import job_create
from tests.cases.builders import SMALL_GEOMETRY, write_case, zip_tree
from tests.cases.test_import import BAD_INPUTS, assert_nothing_stored
from tests.support.jobs import run_job

CASES = ("GX-C-0001", "GX-C-0002", "GX-C-0003")


def _tree(root: Path, damage=None) -> Path:
    for number, case_id in enumerate(CASES):
        folder = write_case(root, case_id, phases=SMALL_GEOMETRY, seed=number + 2)
        if damage is not None and number == 1:
            damage(folder)
    return root


def _upload(tree: Path) -> Path:
    """The zip as the import form stores it (uploads/<token>/...)."""
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "token"
    folder.mkdir(parents=True)
    return zip_tree(tree, folder / "upload.zip", under="export")


def _import_job(tree: Path, name: str, user) -> Job:
    upload = _upload(tree)
    job = job_create(
        kind="import", params={"path": str(upload), "family": "gastricx", "name": name}, user=user
    )
    return run_job(job.pk)


def _contents(name: str) -> dict:
    """What a benchmark holds, without ids and paths (which differ between imports)."""
    benchmark = Benchmark.objects.get(name=name)
    boxes = {box.pk: (box.volume.case.case_id, box.volume.phase) for box in Box.objects.all()}

    def target(item: Item):
        found = dict(item.target or {})
        if "box" in found:
            found["box"] = boxes[found["box"]]
        return found

    volumes = Volume.objects.filter(case__benchmark=benchmark).order_by("case__case_id", "phase")
    return {
        "benchmark": (benchmark.option_letters, benchmark.taxonomy, benchmark.label_sets),
        "cases": [
            (c.case_id, c.tnm, c.reports, c.extra, c.endoscopy_image_id is not None)
            for c in Case.objects.filter(benchmark=benchmark).order_by("case_id")
        ],
        "volumes": [
            (
                v.case.case_id,
                v.phase,
                (v.size_x, v.size_y, v.size_z),
                v.spacing,
                v.origin,
                v.direction,
                v.series_uid,
                (v.hu_min, v.hu_max),
                bool(v.dicom_path),
            )
            for v in volumes
        ],
        "voxels": [
            b"".join(stored.slice(z).tobytes() for z in range(len(stored)))
            for stored in (ChunkedVolume(Path(settings.MEDIA_ROOT) / v.cache_path) for v in volumes)
        ],
        "boxes": sorted(
            (b.volume.case.case_id, b.volume.phase, b.label, b.voxel, b.mm, b.state)
            for b in Box.objects.filter(volume__case__benchmark=benchmark)
        ),
        "items": [
            (i.source_index, i.kind, i.task, i.category, i.question, i.answer, i.reference)
            + (target(i), sorted(i.images.values_list("sha256", flat=True)))
            for i in Item.objects.filter(benchmark=benchmark).order_by("source_index")
        ],
    }


def test_a_chunked_import_makes_the_same_benchmark_with_progress_per_case(tmp_path, people):
    tree = _tree(tmp_path / "cases")
    gastricx_import(path=tree, name="whole", user=people["curator"])

    job = _import_job(tree, "chunked", people["curator"])

    assert job.status == JobStatus.DONE, job.message
    parts = list(JobChunk.objects.filter(job=job).order_by("number"))
    assert [part.params["case_id"] for part in parts] == list(CASES)
    assert all(part.status == JobStatus.DONE for part in parts)
    assert (job.done, job.total) == (len(CASES), len(CASES))
    assert job.result["benchmark"] == "chunked"
    assert job.result["items"] == Item.objects.filter(benchmark__name="chunked").count() > 0
    whole, chunked = _contents("whole"), _contents("chunked")
    assert chunked["voxels"] and all(np.frombuffer(v, np.int16).size for v in chunked["voxels"])
    assert chunked == whole
    # The raw files have served: the upload and the attempt's folder (extracted DICOM, the
    # staged images) are gone; what is left is the stored volumes and images.
    media = Path(settings.MEDIA_ROOT)
    assert not (media / "uploads" / "token").exists()
    assert not any((media / "imports").iterdir())


@pytest.mark.parametrize("breakage", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_a_bad_case_fails_the_whole_import_and_leaves_nothing(tmp_path, people, breakage):
    damage, message = breakage
    job = _import_job(_tree(tmp_path / "cases", damage), "bad", people["curator"])

    assert job.status == JobStatus.FAILED
    reasons = " | ".join(str(RowProblem(**problem)) for problem in job.result["problems"])
    assert re.search(message, reasons), reasons
    assert {problem["row"] for problem in job.result["problems"]} == {2}
    assert job.result["problems_total"] == len(job.result["problems"])
    # No rows, and no file of any case: not the good cases' volumes, not the upload.
    assert_nothing_stored()


def test_a_case_that_crashes_fails_the_job_and_removes_every_case(tmp_path, people, monkeypatch):
    from annotations.services import gastricx_jobs

    real = gastricx_jobs.load_case

    def crash_on_the_last(case, *args):
        if case.case_id == CASES[-1]:
            raise RuntimeError("disk full")
        return real(case, *args)

    monkeypatch.setattr(gastricx_jobs, "load_case", crash_on_the_last)
    with pytest.raises(RuntimeError):
        _import_job(_tree(tmp_path / "cases"), "crash", people["curator"])

    job = Job.objects.get(params__name="crash")
    assert job.status == JobStatus.FAILED and "disk full" in job.message
    assert not Benchmark.objects.exists() and not Volume.objects.exists()
    media = Path(settings.MEDIA_ROOT)
    # The cases already done and the crashed one left nothing; the upload is kept for a retry.
    stored = [p for p in media.rglob("*") if p.is_file() and "uploads" not in p.parts]
    held = [p for p in stored if p.suffix in (".dcm", ".jpg", ".json", ".gz")]
    assert held == [] and not [p for p in (media / "volumes").rglob("*") if p.is_file()]
    assert (media / "uploads" / "token" / "upload.zip").is_file()


def test_the_job_page_shows_progress_per_case(tmp_path, people, client):
    from django.urls import reverse

    from annotations.tasks.imports import benchmark_import_task
    from annotations.tasks.jobs import job_chunk_task

    upload = _upload(_tree(tmp_path / "cases"))
    job = job_create(
        kind="import",
        params={"path": str(upload), "family": "gastricx", "name": "watched"},
        user=people["curator"],
    )
    benchmark_import_task(job.pk)  # planned: a part per case
    first = JobChunk.objects.get(job=job, number=0)
    job_chunk_task(first.pk)
    client.force_login(people["curator"])

    page = client.get(reverse("job", args=[job.pk])).content.decode()

    assert "Cases stored: 1 / 3" in page
    for case_id in CASES:
        assert f"· {case_id}</td>" in page


def test_a_case_whose_worker_died_is_undone_and_taken_again(tmp_path, people):
    from datetime import timedelta

    from django.utils import timezone

    from annotations.services.recovery import lease_claim, reap_stale
    from annotations.tasks.imports import benchmark_import_task
    from tests.support.jobs import run_chunks

    upload = _upload(_tree(tmp_path / "cases"))
    job = job_create(
        kind="import",
        params={"path": str(upload), "family": "gastricx", "name": "revived"},
        user=people["curator"],
    )
    benchmark_import_task(job.pk)
    chunk = JobChunk.objects.get(job=job, number=1)
    # What a worker killed inside the case leaves: the chunk running and quiet, raw DICOM
    # extracted into its attempt's folder, a half-written volumes folder that it noted.
    assert lease_claim(JobChunk.objects.filter(status="queued"), chunk.pk, status="running")
    JobChunk.objects.filter(pk=chunk.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    media = Path(settings.MEDIA_ROOT)
    dead = media / "imports" / chunk.params["job_dir"] / "case-00001-1"
    (dead / "extracted").mkdir(parents=True)
    (dead / "extracted" / "raw.dcm").write_bytes(b"PHIMARKER")
    (dead / "attempt").mkdir()
    (dead / "attempt" / "volumes").write_text(chunk.params["volumes"])
    half = media / chunk.params["volumes"] / "arterial" / "voxels"
    half.mkdir(parents=True)
    (half / "0000.i16.gz").write_bytes(b"half")

    reap_stale()
    run_chunks(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.message
    chunk.refresh_from_db()
    assert (chunk.attempts, chunk.recoveries) == (2, 1)
    assert not dead.exists() and not (media / chunk.params["volumes"]).exists()
    revived = Volume.objects.filter(case__case_id=CASES[1])
    assert revived.count() == len(SMALL_GEOMETRY)
    assert all(v.cache_path.startswith(f"{chunk.params['volumes']}-2/") for v in revived)
    assert not any((media / "imports").iterdir())


def test_a_crashed_import_retried_starts_over_from_its_upload(tmp_path, people, monkeypatch):
    from annotations.services import gastricx_jobs
    from annotations.services.jobs import job_retry

    real = gastricx_jobs.load_case

    def crash_once(case, *args):
        monkeypatch.setattr(gastricx_jobs, "load_case", real)
        raise RuntimeError("disk full")

    monkeypatch.setattr(gastricx_jobs, "load_case", crash_once)
    with pytest.raises(RuntimeError):
        _import_job(_tree(tmp_path / "cases"), "again", people["curator"])
    failed = Job.objects.get(params__name="again")
    assert failed.status == JobStatus.FAILED

    job = run_job(job_retry(job=failed).pk)

    assert job.status == JobStatus.DONE, job.message
    assert job.attempts == 2 and (job.done, job.total) == (len(CASES), len(CASES))
    assert sorted(Case.objects.values_list("case_id", flat=True)) == list(CASES)
    assert set(JobChunk.objects.filter(job=job).values_list("attempts", flat=True)) == {1}
    assert not any((Path(settings.MEDIA_ROOT) / "imports").iterdir())
