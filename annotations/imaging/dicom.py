"""Loading CT volumes from a DICOM series folder or a NIfTI file, in Hounsfield units.

Voxels come back as an int16 array of shape (z, y, x); slices are sorted by ascending position
along the slice normal (the order SimpleITK's series reader uses) and the geometry (spacing,
origin, direction) is kept exactly as SimpleITK computes it, without rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pydicom
import SimpleITK as sitk
from pydicom.errors import InvalidDicomError

from annotations.imaging.geometry import VolumeGeometry

# Relative and absolute tolerance on slice gaps: scanners write positions with ~6 decimals, so
# anything beyond 1% (or 0.01 mm on thin slices) is a missing or duplicated slice.
SPACING_RELATIVE_TOLERANCE = 0.01
SPACING_ABSOLUTE_TOLERANCE = 0.01
INT16_MIN, INT16_MAX = -32768, 32767


class VolumeError(ValueError):
    """A CT series or file that cannot be turned into a volume; the message says why."""


# What pydicom raises on malformed files (bad VRs, values, lengths), while reading or after.
MALFORMED_DICOM = (
    InvalidDicomError,
    EOFError,
    OSError,
    ValueError,
    KeyError,
    TypeError,
    AttributeError,
    IndexError,
    OverflowError,
    NotImplementedError,
)


@dataclass(frozen=True)
class LoadedVolume:
    """One CT volume: HU voxels (z, y, x) int16 and its patient geometry.

    ``series_uid`` is the SeriesInstanceUID found in the files: the app only keeps
    de-identified copies, so there it is already a pseudonym.
    """

    voxels: np.ndarray
    spacing: tuple[float, float, float]
    origin: tuple[float, float, float]
    direction: tuple[float, ...]
    modality: str = ""
    series_uid: str = ""
    files: list[Path] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(z, y, x) voxel counts."""
        z, y, x = self.voxels.shape
        return (int(z), int(y), int(x))

    @property
    def geometry(self) -> VolumeGeometry:
        """Spacing, origin and direction as a plain value object."""
        return VolumeGeometry(self.spacing, self.origin, self.direction)


@dataclass(frozen=True)
class _SliceHeader:
    path: Path
    series_uid: str
    modality: str
    position: tuple[float, float, float]
    orientation: tuple[float, ...]
    rows: int
    columns: int


def load_dicom_series(folder: Path) -> LoadedVolume:
    """Read the one DICOM series in ``folder`` (any file names, any order) as HU int16 voxels.

    Raises ``VolumeError`` for a missing folder, files that are not (complete) DICOM, several
    series in one folder, a single slice, non-greyscale or multi-frame images, or slices whose
    spacing along the normal is not uniform.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise VolumeError(f"DICOM series folder not found: {folder}")
    paths = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not paths:
        raise VolumeError(f"no DICOM files in {folder}")
    headers = [_read_header(path) for path in paths]
    _check_one_series(headers, folder)
    ordered = _sort_along_normal(headers)
    image = _read_with_simpleitk([h.path for h in ordered])
    return LoadedVolume(
        voxels=_to_int16(sitk.GetArrayFromImage(image)),
        spacing=tuple(image.GetSpacing()),  # type: ignore[arg-type]
        origin=tuple(image.GetOrigin()),  # type: ignore[arg-type]
        direction=tuple(image.GetDirection()),
        modality=ordered[0].modality,
        series_uid=ordered[0].series_uid,
        files=[h.path for h in ordered],
    )


def load_nifti(path: Path) -> LoadedVolume:
    """Read a 3D NIfTI file (``<phase>.nii.gz``); SimpleITK converts its RAS geometry to LPS."""
    path = Path(path)
    if not path.is_file():
        raise VolumeError(f"NIfTI file not found: {path}")
    try:
        image = sitk.ReadImage(str(path))
    except RuntimeError as error:
        raise VolumeError(
            f"{path.name}: not a readable NIfTI volume ({_short_message(error)})"
        ) from None
    if image.GetDimension() != 3 or image.GetNumberOfComponentsPerPixel() != 1:
        raise VolumeError(
            f"{path.name}: need a 3D greyscale volume, got {image.GetDimension()}D with "
            f"{image.GetNumberOfComponentsPerPixel()} component(s) per voxel"
        )
    return LoadedVolume(
        voxels=_to_int16(sitk.GetArrayFromImage(image)),
        spacing=tuple(image.GetSpacing()),  # type: ignore[arg-type]
        origin=tuple(image.GetOrigin()),  # type: ignore[arg-type]
        direction=tuple(image.GetDirection()),
        files=[path],
    )


def _read_header(path: Path) -> _SliceHeader:
    try:
        ds = pydicom.dcmread(path, defer_size=1024)
    except MALFORMED_DICOM as error:
        raise VolumeError(f"{path.name}: not a readable DICOM file ({error})") from None
    try:
        return _header_of(ds, path)
    except VolumeError:
        raise
    except MALFORMED_DICOM as error:
        raise VolumeError(f"{path.name}: malformed DICOM header ({error})") from None


def _header_of(ds: pydicom.Dataset, path: Path) -> _SliceHeader:
    _check_pixel_data_complete(ds, path)
    _check_greyscale_single_frame(ds, path)
    try:
        position = tuple(float(v) for v in ds.ImagePositionPatient)
        orientation = tuple(float(v) for v in ds.ImageOrientationPatient)
        header = _SliceHeader(
            path=path,
            series_uid=str(ds.SeriesInstanceUID),
            modality=str(ds.get("Modality", "")),
            position=position,  # type: ignore[arg-type]
            orientation=orientation,
            rows=int(ds.Rows),
            columns=int(ds.Columns),
        )
    except (AttributeError, TypeError, ValueError) as error:
        raise VolumeError(f"{path.name}: missing or invalid image geometry ({error})") from None
    if len(header.position) != 3 or len(header.orientation) != 6:
        raise VolumeError(f"{path.name}: ImagePositionPatient/ImageOrientationPatient malformed")
    return header


def _check_pixel_data_complete(ds: pydicom.Dataset, path: Path) -> None:
    # defer_size leaves PixelData unread, so a file cut short is caught here by comparing the
    # declared length with the bytes really present, without decoding any pixels.
    if "PixelData" not in ds:
        raise VolumeError(f"{path.name}: DICOM file has no pixel data")
    raw = ds.get_item("PixelData")
    length = getattr(raw, "length", None)
    start = getattr(raw, "value_tell", None)
    if length is None or start is None or length == 0xFFFFFFFF:
        return
    if start + length > path.stat().st_size:
        raise VolumeError(f"{path.name}: truncated DICOM file (pixel data cut short)")


def _check_greyscale_single_frame(ds: pydicom.Dataset, path: Path) -> None:
    samples = int(ds.get("SamplesPerPixel", 1))
    photometric = str(ds.get("PhotometricInterpretation", "MONOCHROME2"))
    if samples != 1 or not photometric.startswith("MONOCHROME"):
        raise VolumeError(
            f"{path.name}: not CT-like greyscale pixel data "
            f"({photometric}, {samples} samples per pixel)"
        )
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    if frames > 1:
        raise VolumeError(f"{path.name}: multi-frame images ({frames} frames) are not supported")


def _check_one_series(headers: list[_SliceHeader], folder: Path) -> None:
    series = sorted({h.series_uid for h in headers})
    if len(series) > 1:
        raise VolumeError(
            f"{folder.name}: {len(series)} different series in one folder "
            "(one SeriesInstanceUID per phase folder expected)"
        )
    if len(headers) < 2:
        raise VolumeError(f"{folder.name}: a series needs at least 2 slices, found 1")
    first = headers[0]
    for header in headers[1:]:
        if (header.rows, header.columns) != (first.rows, first.columns):
            raise VolumeError(f"{header.path.name}: slice size differs from {first.path.name}")
        if not np.allclose(header.orientation, first.orientation, atol=1e-4):
            raise VolumeError(f"{header.path.name}: orientation differs from {first.path.name}")


def _sort_along_normal(headers: list[_SliceHeader]) -> list[_SliceHeader]:
    row = np.asarray(headers[0].orientation[:3])
    column = np.asarray(headers[0].orientation[3:])
    normal = np.cross(row, column)
    distances = [float(np.dot(normal, h.position)) for h in headers]
    order = np.argsort(distances, kind="stable")
    ordered = [headers[i] for i in order]
    _check_uniform_spacing(np.sort(np.asarray(distances)), ordered)
    return ordered


def _check_uniform_spacing(distances: np.ndarray, ordered: list[_SliceHeader]) -> None:
    gaps = np.diff(distances)
    if np.any(gaps <= SPACING_ABSOLUTE_TOLERANCE / 10):
        duplicate = int(np.argmin(gaps))
        raise VolumeError(
            f"two slices at the same position: {ordered[duplicate].path.name} and "
            f"{ordered[duplicate + 1].path.name}"
        )
    typical = float(np.median(gaps))
    tolerance = max(SPACING_ABSOLUTE_TOLERANCE, SPACING_RELATIVE_TOLERANCE * typical)
    worst = int(np.argmax(np.abs(gaps - typical)))
    if abs(gaps[worst] - typical) > tolerance:
        raise VolumeError(
            f"inconsistent slice spacing: {gaps[worst]:.4f} mm between "
            f"{ordered[worst].path.name} and {ordered[worst + 1].path.name}, "
            f"{typical:.4f} mm elsewhere (missing slice?)"
        )


def _read_with_simpleitk(paths: list[Path]) -> sitk.Image:
    reader = sitk.ImageSeriesReader()
    reader.SetFileNames([str(p) for p in paths])
    try:
        return reader.Execute()
    except RuntimeError as error:
        raise VolumeError(f"cannot read DICOM pixel data: {_short_message(error)}") from None


def _to_int16(array: np.ndarray) -> np.ndarray:
    if array.dtype == np.int16:
        return np.ascontiguousarray(array)
    if np.issubdtype(array.dtype, np.floating):
        array = np.rint(array)
    return np.ascontiguousarray(np.clip(array, INT16_MIN, INT16_MAX).astype(np.int16))


def _short_message(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
