"""Hostile and malformed Gastric-X input: a report row for each, never a traceback; and the
endoscopy image stored without its metadata."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pydicom
import pytest
from PIL import Image as PILImage

from annotations.models import Case
from annotations.services.cases import gastricx_import_run
from annotations.services.imports import ImportFailed
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case
from tests.cases.test_import import assert_nothing_stored
from tests.formats.builders import jpeg_with_metadata

PYDICOM_FILES = Path(pydicom.__file__).parent / "data" / "test_files"
# pydicom's own malformed or unfit test files: bad VR values, cut short, no file meta, no
# pixels, no geometry, colour, several frames.
MALFORMED = [
    "badVR.dcm",
    "MR_truncated.dcm",
    "rtplan_truncated.dcm",
    "meta_missing_tsyntax.dcm",
    "no_meta.dcm",
    "no_meta_group_length.dcm",
    "UN_sequence.dcm",
    "empty_charset_LEI.dcm",
    "nested_priv_SQ.dcm",
    "JPEG2000-embedded-sequence-delimiter.dcm",
    "ExplVR_BigEndNoMeta.dcm",
    "SC_rgb_small_odd.dcm",
    "rtdose.dcm",
]


def _import(path: Path, people, name: str = "gx"):
    return gastricx_import_run(path=path, name=name, user=people["curator"])


def _refused(path: Path, people) -> list[str]:
    with pytest.raises(ImportFailed) as failure:
        _import(path, people)
    assert_nothing_stored()
    return [str(problem) for problem in failure.value.problems]


@pytest.mark.parametrize("name", MALFORMED)
def test_each_malformed_dicom_file_is_a_report_row(tmp_path, people, name):
    write_case(tmp_path / "cases", "GX-A-GOOD", phases=SMALL_GEOMETRY)
    bad = write_case(tmp_path / "cases", "GX-B-BAD", phases=SMALL_GEOMETRY, seed=4)
    shutil.copy(PYDICOM_FILES / name, bad / "ct" / "arterial" / "0000.dcm")

    problems = _refused(tmp_path / "cases", people)

    assert any(p.startswith("row 2, column 'ct/arterial'") for p in problems), problems


def test_a_zip_holding_ct_as_a_file_and_then_a_folder_is_a_report_row(tmp_path, people):
    tree = write_case(tmp_path / "tree", "GX-ZIP", phases=SMALL_GEOMETRY)
    archive = tmp_path / "clash.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("GX-ZIP/ct", "a file where a folder follows")
        for path in sorted(tree.rglob("*")):
            zipped.write(path, path.relative_to(tmp_path / "tree"))

    problems = _refused(archive, people)

    assert "a file and a folder of the zip have the same name" in problems[0]


@pytest.mark.parametrize(
    ("changes", "column"),
    [
        ({"tnm": "T" * 41}, "tnm"),
        ({"case_id": "GX-" + "9" * 120}, "case_id"),
        (
            {"vqa": [{"question": "Q?", "options": ["a", "b"], "answer": "A", "task": "t" * 201}]},
            "vqa[0]",
        ),
    ],
)
def test_a_text_longer_than_its_column_is_a_report_row(tmp_path, people, changes, column):
    document = {**case_document("GX-LONG"), **changes}
    write_case(tmp_path / "cases", "GX-LONG", phases=SMALL_GEOMETRY, document=document)

    problems = _refused(tmp_path / "cases", people)

    assert any(p.startswith(f"row 1, column '{column}'") and "longer than" in p for p in problems)


def test_the_endoscopy_image_is_stored_without_its_metadata(tmp_path, people):
    original = jpeg_with_metadata(size=(96, 80))
    write_case(tmp_path / "cases", "GX-META", phases=SMALL_GEOMETRY, endoscopy=original)

    result = _import(tmp_path / "cases", people)

    image = Case.objects.get(case_id="GX-META").endoscopy_image
    stored = Path(image.file.path).read_bytes()
    assert b"DOE" not in stored and b"99887766" not in stored
    with PILImage.open(io.BytesIO(stored)) as after, PILImage.open(io.BytesIO(original)) as before:
        assert np.array_equal(np.asarray(after), np.asarray(before))
    [warning] = result.report.warnings
    assert (warning.row, warning.column, warning.code) == (1, "endoscopy", "metadata_removed")
