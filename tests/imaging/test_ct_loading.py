from __future__ import annotations

import math
import shutil
from pathlib import Path

import nibabel
import numpy as np
import pydicom
import pytest
import SimpleITK as sitk
from pydicom.pixels import apply_modality_lut
from pydicom.valuerep import format_number_as_ds

from annotations.imaging.dicom import VolumeError, load_dicom_series, load_nifti
from annotations.imaging.synthct import write_synthetic_series

PYDICOM_TEST_FILES = Path(pydicom.__file__).parent / "data" / "test_files"
CT_SMALL = PYDICOM_TEST_FILES / "CT_small.dcm"
FEET_FIRST = (-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0)
COS30, SIN30 = math.cos(math.radians(30)), math.sin(math.radians(30))
OBLIQUE = (1.0, 0.0, 0.0, 0.0, COS30, -SIN30, 0.0, SIN30, COS30)


def ramp_volume(shape: tuple[int, int, int] = (6, 12, 10)) -> np.ndarray:
    """HU values that differ per voxel, so any transposition or reordering shows."""
    z, y, x = np.indices(shape)
    return (z * 300 + y * 20 + x - 1000).astype(np.int16)


def real_ct_series(folder: Path, count: int = 4, gap: float = 5.0) -> list[Path]:
    """Copies of pydicom's real CT_small.dcm stacked along z, stored values + 10 per slice."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(count):
        ds = pydicom.dcmread(CT_SMALL)
        x, y, z = (float(v) for v in ds.ImagePositionPatient)
        ds.ImagePositionPatient = [format_number_as_ds(v) for v in (x, y, z + gap * k)]
        ds.SOPInstanceUID = pydicom.uid.generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.PixelData = (ds.pixel_array + 10 * k).astype(np.int16).tobytes()
        # Names in reverse order of position: the reader must sort by geometry.
        path = folder / f"img_{count - k:03d}.dcm"
        ds.save_as(path)
        paths.append(path)
    return paths


def test_it_reads_a_real_ct_series_in_hounsfield_units(tmp_path):
    real_ct_series(tmp_path / "series")
    volume = load_dicom_series(tmp_path / "series")
    original = pydicom.dcmread(CT_SMALL)
    hu = apply_modality_lut(original.pixel_array, original)  # slope 1, intercept -1024
    assert volume.voxels.dtype == np.int16
    assert volume.shape == (4, 128, 128)
    for k in range(4):
        assert np.array_equal(volume.voxels[k], hu + 10 * k)
    assert volume.spacing == pytest.approx((0.661468, 0.661468, 5.0), abs=1e-9)
    assert volume.origin == pytest.approx((-158.135803, -179.035797, -75.699997), abs=1e-9)
    assert volume.direction == (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    assert volume.modality == "CT"


def test_geometry_is_exactly_what_simpleitk_reports(tmp_path):
    paths = real_ct_series(tmp_path / "series")
    volume = load_dicom_series(tmp_path / "series")
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames(sitk.ImageSeriesReader.GetGDCMSeriesFileNames(str(tmp_path / "series")))
    image = reader.Execute()
    assert volume.spacing == image.GetSpacing()
    assert volume.origin == image.GetOrigin()
    assert volume.direction == image.GetDirection()
    assert sorted(volume.files) == sorted(paths)


@pytest.mark.parametrize("direction", [FEET_FIRST, OBLIQUE], ids=["feet_first", "oblique"])
def test_it_reads_shuffled_synthetic_series_with_awkward_geometry(tmp_path, direction):
    hu = ramp_volume()
    write_synthetic_series(
        tmp_path / "s",
        hu,
        spacing=(0.7, 0.7, 2.5),
        origin=(-250.3, 180.7, 1200.5),
        direction=direction,
        phase="venous",
        shuffle_names=True,
    )
    volume = load_dicom_series(tmp_path / "s")
    assert np.array_equal(volume.voxels, hu)
    assert volume.spacing == pytest.approx((0.7, 0.7, 2.5), abs=1e-9)
    assert volume.origin == pytest.approx((-250.3, 180.7, 1200.5), abs=1e-9)
    # DICOM stores direction cosines as 16-character decimals.
    assert volume.direction == pytest.approx(direction, abs=1e-12)


def test_synthetic_files_store_hu_plus_1024_unsigned_with_intercept(tmp_path):
    hu = ramp_volume((2, 4, 4))
    paths = write_synthetic_series(
        tmp_path / "s", hu, spacing=(1, 1, 1), origin=(0, 0, 0), phase="arterial"
    )
    ds = pydicom.dcmread(paths[1])
    assert ds.file_meta.TransferSyntaxUID == pydicom.uid.ExplicitVRLittleEndian
    assert ds.SOPClassUID == pydicom.uid.CTImageStorage
    assert (ds.PixelRepresentation, ds.RescaleSlope, ds.RescaleIntercept) == (0, 1, -1024)
    assert np.array_equal(ds.pixel_array.astype(np.int32), hu[1].astype(np.int32) + 1024)


def test_it_reads_nifti_and_converts_ras_to_lps(tmp_path):
    data_xyz = np.transpose(ramp_volume((5, 6, 7)), (2, 1, 0))
    affine = np.diag([0.8, 0.9, 3.0, 1.0])
    affine[:3, 3] = (10.0, 20.0, 30.0)  # RAS millimetres
    nibabel.save(nibabel.Nifti1Image(data_xyz, affine), tmp_path / "venous.nii.gz")
    volume = load_nifti(tmp_path / "venous.nii.gz")
    assert np.array_equal(volume.voxels, ramp_volume((5, 6, 7)))
    assert volume.spacing == pytest.approx((0.8, 0.9, 3.0))
    assert volume.origin == pytest.approx((-10.0, -20.0, 30.0))
    assert volume.direction == pytest.approx((-1, 0, 0, 0, -1, 0, 0, 0, 1))


def _write(folder: Path, hu: np.ndarray | None = None, **kwargs) -> list[Path]:
    hu = ramp_volume((5, 8, 8)) if hu is None else hu
    defaults = {"spacing": (1.0, 1.0, 2.0), "origin": (0.0, 0.0, 0.0), "phase": "venous"}
    return write_synthetic_series(folder, hu, **{**defaults, **kwargs})


def test_it_rejects_a_truncated_dicom_file(tmp_path):
    paths = _write(tmp_path / "s")
    paths[2].write_bytes(paths[2].read_bytes()[:-40])
    with pytest.raises(VolumeError, match="truncated"):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_a_file_cut_inside_its_header(tmp_path):
    paths = _write(tmp_path / "s")
    paths[0].write_bytes(paths[0].read_bytes()[:200])
    with pytest.raises(VolumeError, match=paths[0].name):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_a_file_that_is_not_dicom(tmp_path):
    _write(tmp_path / "s")
    (tmp_path / "s" / "notes.txt").write_text("patient was cooperative")
    with pytest.raises(VolumeError, match="notes.txt: not a readable DICOM"):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_two_series_in_one_folder(tmp_path):
    _write(tmp_path / "s")
    _write(tmp_path / "s", origin=(0.0, 0.0, 1.0), shuffle_names=True)
    with pytest.raises(VolumeError, match="2 different series"):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_a_single_slice(tmp_path):
    _write(tmp_path / "s", hu=ramp_volume((1, 8, 8)))
    with pytest.raises(VolumeError, match="at least 2 slices"):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_a_series_with_a_missing_slice(tmp_path):
    paths = _write(tmp_path / "s")
    paths[2].unlink()
    with pytest.raises(VolumeError, match="inconsistent slice spacing: 4.0000 mm"):
        load_dicom_series(tmp_path / "s")


def test_it_accepts_spacing_jitter_below_the_tolerance(tmp_path):
    paths = _write(tmp_path / "s")
    ds = pydicom.dcmread(paths[2])
    ds.ImagePositionPatient = ["0", "0", "4.005"]  # 0.25% of the 2 mm gap
    ds.save_as(paths[2])
    assert load_dicom_series(tmp_path / "s").shape == (5, 8, 8)


def test_it_rejects_a_missing_folder(tmp_path):
    with pytest.raises(VolumeError, match="not found"):
        load_dicom_series(tmp_path / "nowhere")


def test_it_rejects_rgb_pixel_data(tmp_path):
    rgb = Path(PYDICOM_TEST_FILES.parent.parent.parent) / "data_store" / "data" / "SC_rgb.dcm"
    (tmp_path / "s").mkdir()
    for k in range(2):
        shutil.copy(rgb, tmp_path / "s" / f"{k}.dcm")
    with pytest.raises(VolumeError, match="not CT-like greyscale"):
        load_dicom_series(tmp_path / "s")


def test_it_rejects_a_nifti_that_is_not_3d(tmp_path):
    nibabel.save(nibabel.Nifti1Image(np.zeros((4, 4), np.int16), np.eye(4)), tmp_path / "a.nii.gz")
    with pytest.raises(VolumeError, match="3D"):
        load_nifti(tmp_path / "a.nii.gz")


def test_it_rejects_a_corrupt_nifti(tmp_path):
    (tmp_path / "a.nii.gz").write_bytes(b"\x1f\x8b garbage")
    with pytest.raises(VolumeError, match="not a readable NIfTI"):
        load_nifti(tmp_path / "a.nii.gz")
