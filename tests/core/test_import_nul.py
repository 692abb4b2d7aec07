"""A NUL character (\\u0000) in a Gastric-X case.json or an EndoBench JSON is a problem of the
file, with its code and place, never a database error; the upload is not kept (issue 29)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from annotations.models import Benchmark, Job, JobStatus
from annotations.tasks.imports import benchmark_import_task
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case
from tests.formats.builders import b64, jpeg_bytes

pytestmark = pytest.mark.django_db


def _job(settings, upload: Path, family: str) -> Job:
    return Job.objects.create(
        kind="import", params={"path": str(upload), "family": family, "name": "nul"}
    )


def _upload_folder(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "nul"
    folder.mkdir(parents=True)
    return folder


def test_a_nul_in_a_gastricx_case_json_is_a_coded_problem_and_the_upload_goes(tmp_path, settings):
    settings.DEID_SECRET = "a-test-secret-of-some-length"
    folder = _upload_folder(settings, tmp_path)
    document = case_document("GX-N-0001")
    document["reports"]["ct"] = "Antral mass.\u0000 T3"
    write_case(tmp_path / "tree", "GX-N-0001", phases=SMALL_GEOMETRY, document=document)
    upload = folder / "cases.zip"
    with zipfile.ZipFile(upload, "w") as zipped:
        for path in sorted((tmp_path / "tree").rglob("*")):
            if path.is_file():
                zipped.write(path, path.relative_to(tmp_path / "tree"))
    job = _job(settings, upload, "gastricx")

    benchmark_import_task(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    [problem] = job.result["problems"]
    assert (problem["code"], problem["column"]) == ("nul_character", "reports.ct")
    assert "SQL" not in job.message and "DataError" not in job.message
    assert not Benchmark.objects.exists()
    assert not folder.exists()


def test_a_nul_in_an_endobench_json_item_is_a_coded_problem_and_the_upload_goes(tmp_path, settings):
    folder = _upload_folder(settings, tmp_path)
    item = {
        "index": 1, "question": "Which finding?\u0000", "options": ["polyp", "ulcer"],
        "answer": "A", "image": b64(jpeg_bytes("red")),
    }  # fmt: skip
    upload = folder / "upload.json"
    upload.write_text(json.dumps([item]))
    job = _job(settings, upload, "endobench")

    benchmark_import_task(job.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED, job.message
    codes = [(p["code"], p["column"]) for p in job.result["problems"]]
    assert ("nul_character", "question") in codes
    assert not Benchmark.objects.exists()
    assert not folder.exists()
