"""Imported images keep no metadata: not stored, not served, not released; and the import's
warnings reach its report, its job page and the command's summary."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from PIL import Image as PILImage

from annotations.models import Image, Job
from annotations.services.imports import ImportFailed, benchmark_import_run
from annotations.services.releases import release_export
from annotations.services.review import assignments_create
from annotations.tasks.imports import benchmark_import_task
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.factories import make_personas
from tests.formats.builders import (
    MCQ_HEADER,
    b64,
    jpeg_bytes,
    jpeg_with_metadata,
    mcq_row,
    png_with_metadata,
    write_tsv,
)

pytestmark = pytest.mark.django_db

PHI_BYTES = (b"DOE", b"99887766", b"JANE")


def has_phi(data: bytes) -> bool:
    return any(text in data for text in PHI_BYTES)


def pixels(data: bytes) -> np.ndarray:
    with PILImage.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGBA"))


@pytest.fixture
def phi_import(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    jpeg, png = jpeg_with_metadata(), png_with_metadata()
    rows = [MCQ_HEADER, mcq_row(1, b64(jpeg)), mcq_row(2, b64(png)), mcq_row(3, "1")]
    result = benchmark_import_run(
        path=write_tsv(tmp_path / "phi.tsv", rows), family="vlmeval", name="phi"
    )
    return result, {"jpeg": jpeg, "png": png}


def test_images_are_stored_without_metadata_and_with_the_same_pixels(phi_import):
    result, originals = phi_import
    stored = {image.format: Path(image.file.path).read_bytes() for image in Image.objects.all()}
    assert set(stored) == {"JPEG", "PNG"}
    for name, data in (("JPEG", originals["jpeg"]), ("PNG", originals["png"])):
        assert has_phi(data) and not has_phi(stored[name])
        assert np.array_equal(pixels(stored[name]), pixels(data))
    assert [(w.row, w.code) for w in result.report.warnings] == [
        (1, "metadata_removed"),
        (2, "metadata_removed"),
    ]
    assert "APP1 EXIF" in result.report.warnings[0].detail
    assert "tEXt" in result.report.warnings[1].detail


def test_images_are_served_without_metadata(phi_import, client):
    reviewer = make_personas()["reviewer"]
    # The benchmark's items are the reviewer's: its images are in their scope.
    assignments_create(benchmark=phi_import[0].benchmark, reviewers=[reviewer], per_item=1)
    client.force_login(reviewer)
    for image in Image.objects.all():
        response = client.get(reverse("image", args=[image.sha256]))
        served = b"".join(response.streaming_content)
        assert response.status_code == 200 and served and not has_phi(served)


def test_the_release_tsv_carries_the_images_without_metadata(phi_import, tmp_path):
    result, originals = phi_import
    release_export(benchmark=result.benchmark, out_dir=tmp_path / "release", include_all=True)
    released = (tmp_path / "release" / "phi.tsv").read_bytes()
    frame = pd.read_csv(io.BytesIO(released), sep="\t")
    images = [base64.b64decode(cell) for cell in frame["image"] if len(str(cell)) > 64]
    assert len(images) == 2
    assert not any(has_phi(image) for image in images)
    assert {bytes(pixels(image)) for image in images} == {
        bytes(pixels(originals["jpeg"])),
        bytes(pixels(originals["png"])),
    }


def test_an_image_without_metadata_is_stored_byte_for_byte(tmp_path):
    frame = jpeg_bytes("teal")
    rows = [MCQ_HEADER, mcq_row(1, b64(frame))]
    result = benchmark_import_run(
        path=write_tsv(tmp_path / "plain.tsv", rows), family="vlmeval", name="plain"
    )
    assert Path(Image.objects.get().file.path).read_bytes() == frame
    assert result.report.total == 0


def test_formula_looking_cells_are_imported_verbatim_and_reported(tmp_path):
    rows = [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()), question='=HYPERLINK("http://evil")')]
    result = benchmark_import_run(
        path=write_tsv(tmp_path / "f.tsv", rows), family="vlmeval", name="formula"
    )
    assert result.benchmark.items.get().question == '=HYPERLINK("http://evil")'
    assert result.report.counts == {"formula_like_cell": 1}


def test_a_value_longer_than_its_column_is_a_report_row(tmp_path):
    row = mcq_row(1, b64(jpeg_bytes()))
    row[-1] = "c" * 201  # category holds 200 characters
    with pytest.raises(ImportFailed) as failure:
        benchmark_import_run(
            path=write_tsv(tmp_path / "long.tsv", [MCQ_HEADER, row]), family="vlmeval", name="x"
        )
    [problem] = failure.value.problems
    assert (problem.row, problem.column) == (1, "category") and "201 characters" in problem.reason


def test_the_command_summarises_the_warnings(tmp_path, capsys):
    rows = [MCQ_HEADER, mcq_row(1, b64(jpeg_with_metadata())), mcq_row(2, b64(jpeg_bytes()))]
    call_command(
        "import_benchmark",
        str(write_tsv(tmp_path / "w.tsv", rows)),
        family="vlmeval",
        name="cmd",
        verbosity=0,
    )
    out = capsys.readouterr().out
    assert out.startswith("imported 2 items\n1 warnings: Metadata removed from the image")
    assert "row 1, column 'image'" in out and "APP1 EXIF" in out


def test_the_job_records_its_warnings_and_its_page_shows_them_in_plain_words(
    tmp_path, settings, client
):
    settings.MEDIA_ROOT = tmp_path / "media"
    upload = Path(settings.MEDIA_ROOT) / "uploads" / "u1" / "upload.tsv"
    upload.parent.mkdir(parents=True)
    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_with_metadata())), endo_row(2, "1")]
    rows[2][3] = "@SUM(A1:A9) which landmark?"
    write_tsv(upload, rows)
    job = Job.objects.create(
        kind="import", params={"path": str(upload), "family": "endobench", "name": "endo-w"}
    )

    benchmark_import_task(job.pk)

    job.refresh_from_db()
    assert job.status == "done" and job.result["items"] == 2
    assert job.result["warning_counts"] == {"formula_like_cell": 1, "metadata_removed": 1}
    assert not upload.parent.exists()  # imported: the upload has served
    client.force_login(make_personas()["curator"])
    page = client.get(reverse("job", args=[job.pk])).content.decode()
    assert "Metadata removed from the image" in page
    assert "open the file in a spreadsheet only as text" in page
    assert "@SUM(A1:A9)" in page


def test_a_refused_import_keeps_its_problems_and_drops_its_upload(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    upload = Path(settings.MEDIA_ROOT) / "uploads" / "u2" / "upload.tsv"
    upload.parent.mkdir(parents=True)
    write_tsv(upload, [ENDO_HEADER, endo_row(1, "not base64!")])
    job = Job.objects.create(
        kind="import", params={"path": str(upload), "family": "endobench", "name": "endo-bad"}
    )

    benchmark_import_task(job.pk)

    job.refresh_from_db()
    first = job.result["problems"][0]
    assert job.status == "failed" and (first["row"], first["column"]) == (1, "image")
    assert not upload.parent.exists()
    assert not list(Path(settings.MEDIA_ROOT).rglob("*.jpg"))


def test_a_running_import_shows_its_stage_items_and_percent(client):
    job = Job.objects.create(
        kind="import",
        status="running",
        total=200,
        done=80,
        result={"stage": "reading", "items": 123},
    )
    client.force_login(make_personas()["curator"])
    page = client.get(reverse("job", args=[job.pk]), headers={"HX-Request": "true"})
    assert "Reading: 123 rows checked · 40%" in page.content.decode()
    Job.objects.filter(pk=job.pk).update(result={"stage": "saving", "items": 50}, recoveries=1)
    page = client.get(reverse("job", args=[job.pk])).content.decode()
    assert "Saving: 50 items stored" in page
    assert "restarted once after its worker stopped" in page


def test_a_medqdeg_modality_mismatch_reaches_the_report(tmp_path):
    from annotations.formats.medqdeg import MEDQDEG_COLUMNS

    header = list(MEDQDEG_COLUMNS)
    row = {
        "index": "1",
        "image": b64(jpeg_bytes()),
        "question": "Is the lesion visible?",
        "A": "yes",
        "B": "no",
        "C": "",
        "D": "",
        "E": "",
        "answer": "A",
        "modality": "Endoscopy",
        "degradation_type": "sparse_view",  # a CT degradation on an endoscopy frame
        "degradation_severity": "mild",
        "source": "kvasir",
    }
    result = benchmark_import_run(
        path=write_tsv(tmp_path / "m.tsv", [header, [row[c] for c in header]]),
        family="medqdeg",
        name="medq",
    )
    assert result.report.counts == {"degradation_modality_mismatch": 1}
    assert result.report.warnings[0].column == "degradation_type"
