"""Gastric-X import: geometry, Hounsfield units, boxes in mm, items, and all-or-nothing."""

from __future__ import annotations

import json
import math
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pydicom
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import transaction
from pydicom.pixels import apply_modality_lut

from annotations.imaging import ct
from annotations.imaging.series_store import rebuild_series
from annotations.models import (
    Benchmark,
    Box,
    BoxRevision,
    Case,
    Image,
    Indicator,
    Item,
    ItemImage,
    ItemRevision,
    Volume,
)
from annotations.services.cases import gastricx_import
from annotations.services.errors import DomainError
from annotations.services.imports import ImportFailed
from tests.cases.builders import (
    CT_SMALL,
    PHASE_GEOMETRY,
    SMALL_GEOMETRY,
    case_document,
    write_case,
    write_real_ct_phase,
)
from tests.cases.conftest import media_files

FEET_FIRST = (-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0)
COS30, SIN30 = math.cos(math.radians(30)), math.sin(math.radians(30))
OBLIQUE = (1.0, 0.0, 0.0, 0.0, COS30, -SIN30, 0.0, SIN30, COS30)


def cached_voxels(volume: Volume) -> np.ndarray:
    return np.asarray(ct.open_voxel_cache(Path(settings.MEDIA_ROOT) / volume.cache_path))


def test_it_imports_a_case_with_every_part(imported, people):
    case = imported
    assert case.benchmark.family == "gastricx"
    assert case.tnm == "T3N1M0"
    assert case.reports["ct"] == "Wall thickening along the greater curvature."
    assert case.endoscopy_image.width == 96
    assert sorted(v.phase for v in case.volumes.all()) == sorted(PHASE_GEOMETRY)
    indicators = {i.name: i for i in Indicator.objects.filter(case=case)}
    assert indicators["CEA"].out_of_range and not indicators["Hemoglobin"].out_of_range
    assert indicators["CA72-4"].value == 3.1 and indicators["CA72-4"].reference_low is None
    assert indicators["CA72-4"].value_text == ""
    # A value that is not one number is kept as the lab wrote it, never dropped.
    assert (indicators["CA19-9"].value, indicators["CA19-9"].value_text) == (None, "<0.6")
    assert not indicators["CA19-9"].out_of_range
    items = list(Item.objects.filter(case=case, kind="mcq").order_by("source_index"))
    assert [i.source_index for i in items] == [1, 2]
    assert (items[0].answer, items[0].task, items[0].options[1]) == (
        "B",
        "tnm_classification",
        "T3N1M0",
    )
    assert ItemRevision.objects.filter(item__in=items, version=1, reason="imported").count() == 2
    assert set(ItemImage.objects.filter(item__in=items).values_list("image", flat=True)) == {
        case.endoscopy_image_id
    }


def test_volumes_keep_the_exact_geometry_and_hounsfield_units(imported):
    for volume in imported.volumes.all():
        expected = PHASE_GEOMETRY[volume.phase]
        assert volume.shape == expected["shape"]
        assert volume.spacing == pytest.approx(expected["spacing"], abs=1e-9)
        assert volume.origin == pytest.approx(expected["origin"], abs=1e-9)
        assert volume.direction == list(ct.IDENTITY_DIRECTION)
        phantom = ct.make_abdomen_phantom(expected["shape"], phase=volume.phase, seed=3)
        voxels = cached_voxels(volume)
        assert voxels.dtype == np.int16
        assert np.array_equal(voxels, np.maximum(phantom, -1024))
        assert (volume.hu_min, volume.hu_max) == (int(voxels.min()), int(voxels.max()))


def test_imported_boxes_carry_voxel_and_hand_computed_mm_corners(imported):
    box = Box.objects.get(volume__case=imported)
    assert (box.volume.phase, box.label, box.source, box.state) == (
        "venous",
        "tumor",
        "imported",
        "proposed",
    )
    assert box.voxel == [10, 12, 2, 30, 40, 6]
    # venous: origin (-251.6, 181.4, -890), spacing (0.8, 0.7, 5), identity direction.
    assert box.mm[0] == pytest.approx([-251.6 + 10 * 0.8, 181.4 + 12 * 0.7, -890 + 2 * 5])
    assert box.mm[1] == pytest.approx([-251.6 + 29 * 0.8, 181.4 + 39 * 0.7, -890 + 5 * 5])
    revision = BoxRevision.objects.get(box=box)
    assert (revision.version, revision.reason, revision.coords) == (1, "imported", box.voxel)


@pytest.mark.parametrize("direction", [FEET_FIRST, OBLIQUE], ids=["feet_first", "oblique"])
def test_awkward_directions_far_origins_and_shuffled_names_survive_import(
    tmp_path, people, direction
):
    geometry = {
        "shape": (8, 40, 50),
        "spacing": (0.9, 0.6, 3.0),
        "origin": (1200.5, -800.25, 1500.0),
    }
    document = case_document(
        "GX-ODD", boxes=[{"phase": "arterial", "label": "stomach", "voxel": [5, 6, 1, 45, 30, 7]}]
    )
    write_case(
        tmp_path / "c",
        "GX-ODD",
        phases={"arterial": {**geometry, "direction": direction}},
        document=document,
    )
    gastricx_import(path=tmp_path / "c", name="odd", user=people["curator"])

    volume = Volume.objects.get(case__case_id="GX-ODD")
    assert volume.direction == pytest.approx(list(direction), abs=1e-6)
    assert volume.origin == pytest.approx(geometry["origin"], abs=1e-6)
    phantom = ct.make_abdomen_phantom(geometry["shape"], phase="arterial", seed=3)
    assert np.array_equal(cached_voxels(volume), np.maximum(phantom, -1024))
    d = np.asarray(direction).reshape(3, 3)
    first = np.asarray(geometry["origin"]) + d @ (np.array([5, 6, 1]) * geometry["spacing"])
    last = np.asarray(geometry["origin"]) + d @ (np.array([44, 29, 6]) * geometry["spacing"])
    box = Box.objects.get(volume=volume)
    assert box.mm[0] == pytest.approx(first.tolist(), abs=1e-6)
    assert box.mm[1] == pytest.approx(last.tolist(), abs=1e-6)


def test_it_imports_real_dicom_from_pydicom_data_in_hounsfield_units(tmp_path, people):
    folder = tmp_path / "c" / "GX-REAL"
    write_real_ct_phase(folder / "ct" / "venous")
    document = case_document(
        "GX-REAL", boxes=[{"phase": "venous", "label": "tumor", "voxel": [0, 0, 0, 128, 128, 4]}]
    )
    (folder / "case.json").write_text(json.dumps(document))
    gastricx_import(path=tmp_path / "c", name="real", user=people["curator"])

    volume = Volume.objects.get(case__case_id="GX-REAL")
    original = pydicom.dcmread(CT_SMALL)
    hu = apply_modality_lut(original.pixel_array, original)
    voxels = cached_voxels(volume)
    assert voxels.shape == (4, 128, 128)
    for k in range(4):
        assert np.array_equal(voxels[k], hu + 10 * k)
    assert volume.spacing == pytest.approx([0.661468, 0.661468, 5.0], abs=1e-9)
    assert volume.origin == pytest.approx([-158.135803, -179.035797, -75.699997], abs=1e-9)
    box = Box.objects.get(volume=volume)
    assert box.mm[0] == pytest.approx(volume.origin)
    assert box.mm[1] == pytest.approx(
        [-158.135803 + 127 * 0.661468, -179.035797 + 127 * 0.661468, -75.699997 + 15.0]
    )
    assert Case.objects.get(case_id="GX-REAL").endoscopy_image is None


def test_stored_dicom_is_de_identified_and_reads_back_identically(imported, tmp_path):
    volume = imported.volumes.get(phase="arterial")
    headers = Path(settings.MEDIA_ROOT) / volume.dicom_path
    assert all("PixelData" not in pydicom.dcmread(path) for path in headers.iterdir())
    # The pixels are stored once, in the chunks; the whole series is rebuilt from both.
    stored = tmp_path / "rebuilt"
    rebuild_series(
        headers, ct.open_voxel_cache(Path(settings.MEDIA_ROOT) / volume.cache_path), stored
    )
    files = sorted(stored.iterdir())
    assert len(files) == 20
    header = pydicom.dcmread(files[0])
    assert header.PatientIdentityRemoved == "YES"
    assert header.PatientName.family_name == "ANON"
    assert "InstitutionName" not in header and not header.PatientBirthDate
    assert header.SeriesInstanceUID == volume.series_uid
    again = ct.load_dicom_series(stored)
    assert np.array_equal(again.voxels, cached_voxels(volume))
    assert again.origin == pytest.approx(volume.origin)


def test_a_zip_of_cases_imports_like_the_folder(tmp_path, people):
    write_case(tmp_path / "tree", "GX-ZIP", phases=SMALL_GEOMETRY)
    archive = tmp_path / "cases.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in (tmp_path / "tree").rglob("*"):
            zipped.write(path, path.relative_to(tmp_path / "tree"))
    gastricx_import(path=archive, name="zipped", user=people["curator"])
    assert Volume.objects.filter(case__case_id="GX-ZIP").count() == 3


def test_the_management_command_imports_a_root_folder(tmp_path, people, capsys):
    write_case(tmp_path / "cases", "GX-CMD", phases=SMALL_GEOMETRY)
    call_command(
        "import_benchmark", str(tmp_path / "cases"), family="gastricx", name="cmd", verbosity=0
    )
    assert "imported 13 items" in capsys.readouterr().out  # every task's items
    assert Benchmark.objects.get(name="cmd").cases.get().case_id == "GX-CMD"


def test_a_taken_name_is_refused(imported, tmp_path):
    write_case(tmp_path / "again", "GX-AGAIN", phases=SMALL_GEOMETRY)
    with pytest.raises(DomainError, match="already exists"):
        gastricx_import(path=tmp_path / "again", name="gx")


# --- bad input: a clear error and nothing stored ----------------------------------------------


def _truncate(case: Path) -> None:
    victim = sorted((case / "ct" / "arterial").iterdir())[3]
    victim.write_bytes(victim.read_bytes()[:-700])


def _mix_series(case: Path) -> None:
    stranger = sorted((case / "ct" / "venous").iterdir())[0]
    shutil.copy(stranger, case / "ct" / "arterial" / "stranger.dcm")


def _one_slice(case: Path) -> None:
    for path in sorted((case / "ct" / "venous").iterdir())[1:]:
        path.unlink()


def _gap(case: Path) -> None:
    by_position = sorted(
        (case / "ct" / "delayed").iterdir(),
        key=lambda p: float(pydicom.dcmread(p, stop_before_pixels=True).ImagePositionPatient[2]),
    )
    by_position[3].unlink()


def _missing_fields(case: Path) -> None:
    document = json.loads((case / "case.json").read_text())
    del document["vqa"], document["tnm"]
    (case / "case.json").write_text(json.dumps(document))


def _box_outside(case: Path) -> None:
    document = json.loads((case / "case.json").read_text())
    document["boxes"] = [{"phase": "venous", "label": "tumor", "voxel": [10, 12, 2, 30, 40, 10]}]
    (case / "case.json").write_text(json.dumps(document))


def _missing_report(case: Path) -> None:
    document = json.loads((case / "case.json").read_text())
    del document["reports"]["ct"]
    (case / "case.json").write_text(json.dumps(document))


def _tnm_outside_label_set(case: Path) -> None:
    document = json.loads((case / "case.json").read_text())
    document["tnm"] = "T3N1M2"
    (case / "case.json").write_text(json.dumps(document))


BAD_INPUTS = {
    # Cut inside the pixel data: caught by the header check or when SimpleITK reads the pixels.
    "truncated_dicom": (_truncate, r"ct/arterial.*(truncated|cannot read DICOM pixel data)"),
    "mixed_series": (_mix_series, "ct/arterial.*different series"),
    "one_slice_phase": (_one_slice, "ct/venous.*at least 2 slices"),
    "inconsistent_spacing": (_gap, "ct/delayed.*inconsistent slice spacing"),
    "missing_fields": (_missing_fields, "lacks field 'vqa'"),
    "box_outside_volume": (_box_outside, r"boxes\[0\].*outside the venous volume"),
    "missing_report": (_missing_report, r"reports\.ct.*lacks 'ct'"),
    "tnm_outside_label_set": (_tnm_outside_label_set, r"'tnm'.*M2 is not in the label set"),
}


def assert_nothing_stored() -> None:
    for model in (Benchmark, Case, Volume, Box, BoxRevision, Indicator, Item, ItemRevision, Image):
        assert not model.objects.exists(), model.__name__
    assert media_files() == []


@pytest.mark.parametrize("breakage", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_refused_with_a_clear_error_and_nothing_is_stored(tmp_path, people, breakage):
    damage, message = breakage
    # A good case first: its files must go too.
    write_case(tmp_path / "cases", "GX-A-GOOD", phases=SMALL_GEOMETRY)
    damage(write_case(tmp_path / "cases", "GX-B-BAD", phases=SMALL_GEOMETRY, seed=4))
    with pytest.raises(ImportFailed) as failure:
        gastricx_import(path=tmp_path / "cases", name="bad", user=people["curator"])
    reasons = " | ".join(str(p) for p in failure.value.problems)
    assert re.search(message, reasons), reasons
    assert "row 2" in reasons  # the second case folder, by name order
    assert_nothing_stored()


def test_a_zip_entry_escaping_the_folder_is_refused_and_nothing_is_stored(tmp_path, people):
    write_case(tmp_path / "tree", "GX-ZIP", phases=SMALL_GEOMETRY)
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in (tmp_path / "tree").rglob("*"):
            zipped.write(path, path.relative_to(tmp_path / "tree"))
        zipped.writestr("../../escaped.txt", "gotcha")
    with pytest.raises(ImportFailed) as failure:
        gastricx_import(path=archive, name="evil", user=people["curator"])
    assert "unsafe zip entry" in str(failure.value.problems[0])
    assert not (tmp_path / "escaped.txt").exists()
    assert_nothing_stored()


def test_a_broken_endoscopy_image_rolls_back_rows_and_files(tmp_path, people):
    write_case(tmp_path / "cases", "GX-A-GOOD", phases=SMALL_GEOMETRY)
    write_case(
        tmp_path / "cases", "GX-B-BAD", phases=SMALL_GEOMETRY, endoscopy=b"\xff\xd8not a jpeg"
    )
    with pytest.raises(ImportFailed) as failure:
        gastricx_import(path=tmp_path / "cases", name="bad", user=people["curator"])
    assert failure.value.problems[0].column == "endoscopy"
    assert_nothing_stored()


def test_deleting_volumes_cases_or_the_benchmark_removes_their_files_once_committed(
    tmp_path, people, django_capture_on_commit_callbacks
):
    write_case(tmp_path / "cases", "GX-T-0001")
    write_case(tmp_path / "cases", "GX-T-0002", phases=SMALL_GEOMETRY)
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx", user=people["curator"])
    media = Path(settings.MEDIA_ROOT)
    first, second = Case.objects.filter(benchmark=benchmark).order_by("case_id")
    folder = lambda volume: (media / volume.cache_path).parent  # noqa: E731
    venous = first.volumes.get(phase="venous")
    kept = [folder(v) for v in first.volumes.exclude(pk=venous.pk)]
    assert folder(venous).is_dir() and (folder(venous) / "dicom").is_dir()

    venous_id = venous.pk
    with pytest.raises(RuntimeError), transaction.atomic():  # rolled back: the files stay
        Volume.objects.get(pk=venous_id).delete()
        raise RuntimeError
    assert folder(venous).is_dir()

    with django_capture_on_commit_callbacks(execute=True):
        Volume.objects.get(pk=venous_id).delete()
    assert not folder(venous).exists()
    assert all(path.is_dir() for path in kept)  # the case's other phases stay

    import_root = folder(venous).parents[1]
    second_folders = [folder(v) for v in second.volumes.all()]
    assert len(second_folders) == 3 and all(path.is_dir() for path in second_folders)
    with django_capture_on_commit_callbacks(execute=True):
        second.delete()
    assert not any(path.exists() for path in second_folders)
    assert not second_folders[0].parent.exists()  # the case's folder went with its last phase
    assert import_root.is_dir() and all(path.is_dir() for path in kept)
    with django_capture_on_commit_callbacks(execute=True):
        benchmark.delete()
    assert not import_root.exists()  # the import's folder goes with its last volume
    assert (media / "volumes").is_dir()


@pytest.mark.parametrize(
    ("written", "value", "text"),
    [
        (" 12.5 ", 12.5, ""),
        ("nan", None, "nan"),
        ("inf", None, "inf"),
        ("positive", None, "positive"),
    ],
)
def test_an_indicator_written_as_text_keeps_its_number_or_its_words(
    tmp_path, people, written, value, text
):
    indicators = [{"name": "AFP", "value": written, "unit": "ng/mL", "reference_range": [0, 7]}]
    document = case_document("GX-T-0009", indicators=indicators)
    write_case(tmp_path / "cases", "GX-T-0009", phases=SMALL_GEOMETRY, document=document)
    gastricx_import(path=tmp_path / "cases", name="gx-text", user=people["curator"])
    indicator = Indicator.objects.get(name="AFP")
    assert (indicator.value, indicator.value_text) == (value, text)
