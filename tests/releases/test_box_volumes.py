"""3D boxes out for 3D Slicer and MONAI: a release's NIfTI label maps and DICOM SEG, read back
with nibabel, SimpleITK and pydicom, hold the same voxels and millimetre corners, on an oblique
series whose LPS/RAS handling would show any sign slip."""

from __future__ import annotations

import json
import math
from pathlib import Path

import nibabel
import numpy as np
import pydicom
import pytest
import SimpleITK as sitk
from django.core.management import call_command
from django.core.management.base import CommandError

from annotations.formats.release_layout import ExportOptions
from annotations.imaging import ct
from annotations.models import Box, Case, Volume
from annotations.services.cases import gastricx_import
from annotations.services.releases import release_export
from tests.cases.builders import case_document, write_case
from tests.factories import make_personas

pytestmark = pytest.mark.django_db

ANGLE = math.radians(20)
# Columns are the x, y and slice axes (LPS): rotated in plane about the slice normal.
OBLIQUE = (
    math.cos(ANGLE), -math.sin(ANGLE), 0.0,
    math.sin(ANGLE), math.cos(ANGLE), 0.0,
    0.0, 0.0, 1.0,
)  # fmt: skip
PHASES = {
    "arterial": {"shape": (9, 40, 32), "spacing": (0.8, 0.7, 5.0), "origin": (-30.0, 20.0, -90.0)},
    "venous": {
        "shape": (12, 40, 32),
        "spacing": (0.8, 0.7, 2.5),
        "origin": (-31.5, 21.0, -88.0),
        "direction": OBLIQUE,
    },
}
BOXES = [
    {"phase": "venous", "label": "stomach", "voxel": [4, 5, 1, 28, 36, 11]},
    {"phase": "venous", "label": "tumor", "voxel": [10, 12, 2, 20, 30, 6]},
    {"phase": "arterial", "label": "lymph_node", "voxel": [2, 3, 4, 6, 9, 7]},
]


@pytest.fixture
def case(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    people = make_personas()
    write_case(
        tmp_path / "cases",
        "GX-BOX-1",
        phases=PHASES,
        document=case_document("GX-BOX-1", boxes=BOXES),
    )
    gastricx_import(path=tmp_path / "cases", name="gx-boxes", user=people["curator"])
    return Case.objects.get(case_id="GX-BOX-1")


def box_of(case, label: str) -> Box:
    return Box.objects.get(volume__case=case, label=label)


def bounds(mask: np.ndarray) -> list[int]:
    """[x0, y0, z0, x1, y1, z1] of a (z, y, x) mask, end-exclusive."""
    zs, ys, xs = (np.flatnonzero(mask.any(axis=axes)) for axes in ((1, 2), (0, 2), (0, 1)))
    return [int(xs[0]), int(ys[0]), int(zs[0]), int(xs[-1]) + 1, int(ys[-1]) + 1, int(zs[-1]) + 1]


def check_nifti(path: Path, volume: Volume, boxes: dict[str, Box], values: dict[str, int]):
    image = nibabel.load(path)
    labels = np.asarray(image.dataobj).transpose(2, 1, 0)  # NIfTI (x, y, z) → ours (z, y, x)
    assert labels.shape == volume.shape
    for label, box in boxes.items():
        mask = labels == values[label]
        if label == "stomach":  # the tumor inside it wins there
            mask |= labels == values["tumor"]
        assert bounds(mask) == box.voxel, label
        x0, y0, z0, x1, y1, z1 = box.voxel
        assert mask.sum() == (x1 - x0) * (y1 - y0) * (z1 - z0), label
        # The affine is RAS: LPS is its first two coordinates negated.
        for corner, mm in zip(([x0, y0, z0], [x1 - 1, y1 - 1, z1 - 1]), box.mm, strict=True):
            ras = image.affine @ np.array([*corner, 1.0])
            assert [-ras[0], -ras[1], ras[2]] == pytest.approx(mm, abs=1e-4), label
    # A reader in LPS (SimpleITK, as 3D Slicer) gets the series geometry back.
    again = sitk.ReadImage(str(path))
    assert again.GetOrigin() == pytest.approx(volume.origin, abs=1e-4)
    assert again.GetSpacing() == pytest.approx(volume.spacing, abs=1e-5)
    assert again.GetDirection() == pytest.approx(volume.direction, abs=1e-5)


def check_seg(path: Path, volume: Volume, boxes: dict[str, Box], names: dict[str, str]):
    seg = pydicom.dcmread(path)
    assert seg.Modality == "SEG" and seg.SegmentationType == "BINARY"
    assert seg.ReferencedSeriesSequence[0].SeriesInstanceUID == volume.series_uid
    assert "PHIMARKER" not in str(seg) and seg.PatientName.family_name == "ANON"
    segment_labels = {s.SegmentNumber: s.SegmentLabel for s in seg.SegmentSequence}
    assert sorted(segment_labels.values()) == sorted(names[label] for label in boxes)
    shared = seg.SharedFunctionalGroupsSequence[0]
    orientation = [float(v) for v in shared.PlaneOrientationSequence[0].ImageOrientationPatient]
    row_gap, column_gap = (float(v) for v in shared.PixelMeasuresSequence[0].PixelSpacing)
    masks: dict[str, np.ndarray] = {name: np.zeros(volume.shape, bool) for name in names.values()}
    frames = seg.pixel_array.reshape(-1, volume.size_y, volume.size_x)
    for frame, group in zip(frames, seg.PerFrameFunctionalGroupsSequence, strict=True):
        # With one segment its identification is shared by every frame.
        identified = group if "SegmentIdentificationSequence" in group else shared
        number = identified.SegmentIdentificationSequence[0].ReferencedSegmentNumber
        position = [float(v) for v in group.PlanePositionSequence[0].ImagePositionPatient]
        index = ct.lps_to_index(position, volume.spacing, volume.origin, volume.direction)
        assert index[0] == pytest.approx(0, abs=1e-4) and index[1] == pytest.approx(0, abs=1e-4)
        masks[segment_labels[number]][round(index[2])] |= frame.astype(bool)
    for label, box in boxes.items():
        mask = masks[names[label]]
        assert bounds(mask) == box.voxel, label
        x0, y0, z0, x1, y1, z1 = box.voxel
        assert mask.sum() == (x1 - x0) * (y1 - y0) * (z1 - z0), label
        # The corners in millimetres from the SEG's own plane geometry (DICOM LPS).
        for corner, mm in zip(([x0, y0, z0], [x1 - 1, y1 - 1, z1 - 1]), box.mm, strict=True):
            top_left = ct.index_to_lps(
                (0, 0, corner[2]), volume.spacing, volume.origin, volume.direction
            )
            point = (
                np.asarray(top_left)
                + np.asarray(orientation[:3]) * corner[0] * column_gap
                + np.asarray(orientation[3:]) * corner[1] * row_gap
            )
            assert list(point) == pytest.approx(mm, abs=1e-4), label


def test_a_release_writes_label_maps_and_seg_that_read_back_to_the_same_boxes(case, tmp_path):
    out = tmp_path / "release"
    result = release_export(
        benchmark=case.benchmark,
        out_dir=out,
        include_all=True,
        options=ExportOptions.release(version="1.0", box_volumes=True),
    )
    entry = result.manifest["layout"]["box_volumes"]
    values = {label: int(v) for v, label in entry["label_ids"].items()}
    names = {label: entry["labels"][str(v)] for label, v in values.items()}
    assert names["tumor"] == "Tumor" and names["lymph_node"] == "Lymph node"
    files = {f["phase"]: f for f in entry["files"]}
    assert set(files) == {"arterial", "venous"}
    on_disk = json.loads((out / "manifest.json").read_text())["layout"]["box_volumes"]
    assert on_disk == entry
    for phase, wanted in (("venous", ("stomach", "tumor")), ("arterial", ("lymph_node",))):
        volume = case.volumes.get(phase=phase)
        boxes = {label: box_of(case, label) for label in wanted}
        assert files[phase]["boxes"] == len(boxes)
        check_nifti(out / files[phase]["nifti"]["path"], volume, boxes, values)
        check_seg(out / files[phase]["seg"]["path"], volume, boxes, names)


def test_rejected_boxes_stay_out_and_the_command_writes_one_benchmark(case, tmp_path, capsys):
    Box.objects.filter(label="lymph_node").update(state="rejected")
    out = tmp_path / "boxes-out"
    call_command("export_box_volumes", "gx-boxes", str(out))
    assert "1 label maps and 1 DICOM SEG" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "boxes" / "GX-BOX-1").iterdir()) == [
        "venous.nii.gz",
        "venous_seg.dcm",
    ]
    labels = np.asarray(nibabel.load(out / "boxes/GX-BOX-1/venous.nii.gz").dataobj)
    assert set(np.unique(labels)) == {0, 1, 3}  # background, tumor, stomach
    with pytest.raises(CommandError):
        call_command("export_box_volumes", "gx-boxes", str(out))  # never over an export
    with pytest.raises(CommandError):
        call_command("export_box_volumes", "no-such-benchmark", str(tmp_path / "x"))
