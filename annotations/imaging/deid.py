"""DICOM de-identification: PS3.15 Annex E's basic profile, with keyed pseudonyms on top.

Which attribute gets which action (remove, empty, dummy, new UID) is the standard's table as
maintained by the `dicom-anonymizer` package (Kitware; its PS3.15 2026c table), applied
through every sequence. On top of it: patient name and ID become keyed pseudonyms, UIDs become
deterministic ``2.25.`` UIDs, dates are shifted by a per-patient offset (intervals between a
patient's studies survive; option "Retain Longitudinal Temporal Information with Modified
Dates"), times are emptied; where the table lets us choose between removing and keeping an
attribute, it is removed; private tags, overlays, curves, free text and person names the table
does not list go too. Geometry, rescale and pixel data are untouched. Pseudonyms are
HMAC-SHA256 of the original under the deployment's secret, so the same patient or UID maps to
the same pseudonym in every import made with that secret.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pydicom
from dicomanonymizer.dicomfields_selector import dicom_anonymization_database_selector
from dicomanonymizer.simpledicomanonymizer import empty_element, replace_element
from pydicom.dataelem import DataElement
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence
from pydicom.uid import ExplicitVRLittleEndian

from annotations.imaging.dicom import MALFORMED_DICOM, VolumeError

# The edition of PS3.15 Annex E table E.1-1 the profile follows (dicom-anonymizer's name).
PROFILE_TABLE = "dicomfields_2026c"
DEIDENTIFICATION_METHOD = "PS3.15 E.1 basic profile 2026c; pseudonymised UIDs, dates"
# UIDs under the DICOM root name standard things (SOP classes, transfer syntaxes): keep them.
STANDARD_UID_ROOT = "1.2.840.10008."
MAX_DATE_SHIFT_DAYS = 3650
# Free text (and values of unknown VR) may hold anything, names included: drop it all.
FREE_TEXT_VRS = frozenset({"LT", "ST", "UT", "UN"})
DATE_VRS = frozenset({"DA", "DT", "TM"})
# Dates that identify rather than order a patient's studies: the table's action, not a shift.
UNSHIFTED_DATES = frozenset({"PatientBirthDate"})
# The table's categories and the action each stands for in PS3.15.
_CATEGORIES = {
    "D_TAGS": "D",
    "Z_TAGS": "Z",
    "X_TAGS": "X",
    "U_TAGS": "U",
    "Z_D_TAGS": "Z/D",
    "X_Z_TAGS": "X/Z",
    "X_D_TAGS": "X/D",
    "X_Z_D_TAGS": "X/Z/D",
    "X_Z_U_STAR_TAGS": "X/Z/U*",
}


@cache
def profile_actions() -> tuple[dict[int, str], tuple[tuple[int, int, int, int, str], ...]]:
    """The basic profile: tag -> action, and the masked entries (repeating groups)."""
    table = dicom_anonymization_database_selector(PROFILE_TABLE)
    actions: dict[int, str] = {}
    masked = []
    for category, action in _CATEGORIES.items():
        for entry in table[category]:
            if len(entry) == 2:
                actions[(entry[0] << 16) | entry[1]] = action
            else:
                masked.append((*entry, action))
    return actions, tuple(masked)


def profile_action(tag: int) -> str | None:
    """The basic profile's action for `tag` ("X", "Z", "D", "U", "X/Z"...), or None."""
    actions, masked = profile_actions()
    action = actions.get(tag)
    if action is not None:
        return action
    group, element = tag >> 16, tag & 0xFFFF
    for g, e, group_mask, element_mask, masked_action in masked:
        if group & group_mask == g & group_mask and element & element_mask == e & element_mask:
            return masked_action
    return None


class Pseudonymizer:
    """Consistent, secret-keyed pseudonyms for patients, UIDs and date shifts."""

    def __init__(self, secret: str) -> None:
        if not secret:
            raise ValueError("a de-identification secret is required")
        self._key = secret.encode("utf-8")

    def _digest(self, kind: str, original: str) -> bytes:
        message = f"{kind}\x00{original}".encode()
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def uid(self, original: str) -> str:
        """A ``2.25.<uuid>`` UID standing for ``original`` (PS3.5 B.2: UUID-derived UIDs)."""
        return f"2.25.{uuid.UUID(bytes=self._digest('uid', original)[:16]).int}"

    def patient_id(self, original: str) -> str:
        """Pseudonymous patient ID, e.g. ``ANON-3F9A1C22B7``."""
        return f"ANON-{self._digest('patient', original).hex()[:10].upper()}"

    def patient_name(self, original_patient_id: str) -> str:
        """Pseudonymous patient name, derived from the patient ID so both agree."""
        return f"ANON^{self.patient_id(original_patient_id)[5:]}"

    def date_shift_days(self, original_patient_id: str) -> int:
        """Days (1 to 10 years back) by which every date of this patient is moved."""
        value = int.from_bytes(self._digest("date", original_patient_id)[:4], "big")
        return -(1 + value % MAX_DATE_SHIFT_DAYS)


def deidentify_dataset(ds: Dataset, pseudonyms: Pseudonymizer) -> None:
    """De-identify ``ds`` in place (sequences and file meta included); geometry/pixels are kept."""
    original_id = str(ds.get("PatientID", "") or ds.get("PatientName", "") or "")
    shift = dt.timedelta(days=pseudonyms.date_shift_days(original_id))
    ds.remove_private_tags()
    _remove_overlays_and_curves(ds)
    _clean_recursively(ds, pseudonyms, shift)
    ds.PatientID = pseudonyms.patient_id(original_id)
    ds.PatientName = pseudonyms.patient_name(original_id)
    ds.PatientIdentityRemoved = "YES"
    ds.DeidentificationMethod = DEIDENTIFICATION_METHOD
    ds.DeidentificationMethodCodeSequence = Sequence(
        [
            _code("113100", "Basic Application Confidentiality Profile"),
            _code("113107", "Retain Longitudinal Temporal Information Modified Dates Option"),
        ]
    )
    meta = getattr(ds, "file_meta", None)
    if meta is not None:
        if "MediaStorageSOPInstanceUID" in meta and "SOPInstanceUID" in ds:
            meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        for keyword in ("SourceApplicationEntityTitle", "SendingApplicationEntityTitle"):
            if keyword in meta:
                delattr(meta, keyword)


def deidentify_series(
    src_folder: Path, dst_folder: Path, pseudonymizer: Pseudonymizer, *, pixels: bool = True
) -> list[Path]:
    """Write de-identified copies of every DICOM file in ``src_folder`` into ``dst_folder``.

    Output files are named by their pseudonymous SOP Instance UID, because original file names
    may carry identifiers. Without ``pixels`` only the headers are kept (the pixel data lives
    in the volume's stored chunks; ``imaging.series_store.rebuild_series`` joins them again).
    Raises ``VolumeError`` on a file that is not readable DICOM.
    """
    src_folder, dst_folder = Path(src_folder), Path(dst_folder)
    if not src_folder.is_dir():
        raise VolumeError(f"DICOM series folder not found: {src_folder}")
    dst_folder.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(
        p for p in src_folder.iterdir() if p.is_file() and not p.name.startswith(".")
    ):
        try:
            ds = pydicom.dcmread(path)
            deidentify_dataset(ds, pseudonymizer)
            if not pixels:
                strip_pixels(ds)
            target = dst_folder / f"{ds.get('SOPInstanceUID', pseudonymizer.uid(path.name))}.dcm"
            ds.save_as(target, enforce_file_format=True)
        except MALFORMED_DICOM as error:
            raise VolumeError(f"{path.name}: not a readable DICOM file ({error})") from None
        written.append(target)
    return written


def strip_pixels(ds: Dataset) -> None:
    """Remove the pixel data (and what only describes its encoding) from ``ds``, leaving an
    uncompressed header that ``rebuild_series`` can fill again."""
    for keyword in ("PixelData", "FloatPixelData", "DoubleFloatPixelData"):
        if keyword in ds:
            delattr(ds, keyword)
    meta = getattr(ds, "file_meta", None)
    if meta is not None and meta.get("TransferSyntaxUID") not in (None, ExplicitVRLittleEndian):
        meta.TransferSyntaxUID = ExplicitVRLittleEndian


def _code(value: str, meaning: str) -> Dataset:
    item = Dataset()
    item.CodeValue, item.CodingSchemeDesignator, item.CodeMeaning = value, "DCM", meaning
    return item


def _remove_overlays_and_curves(ds: Dataset) -> None:
    # Overlay planes (60xx) and curves (50xx) can hold burned-in text or annotations.
    groups = [
        e.tag for e in ds if 0x5000 <= e.tag.group <= 0x50FF or 0x6000 <= e.tag.group <= 0x60FF
    ]
    for tag in groups:
        del ds[tag]


def _clean_recursively(ds: Dataset, pseudonyms: Pseudonymizer, shift: dt.timedelta) -> None:
    for element in list(ds):
        keyword = element.keyword
        if keyword == "PatientID":
            # Nested references to the patient (e.g. in referenced studies) get the same alias.
            element.value = pseudonyms.patient_id(str(element.value or ""))
        elif keyword == "PatientName":
            continue  # set from the patient's pseudonym at the end
        else:
            _apply(ds, element, profile_action(int(element.tag)), pseudonyms, shift)


def _apply(
    ds: Dataset,
    element: DataElement,
    action: str | None,
    pseudonyms: Pseudonymizer,
    shift: dt.timedelta,
) -> None:
    if action == "X" or (action in ("X/Z", "X/D", "X/Z/D") and element.VR not in DATE_VRS):
        del ds[element.tag]
    elif element.VR == "SQ":
        if action in ("D", "Z", "Z/D"):
            replace_element(element) if action == "D" else empty_element(element)
        for item in element.value:
            _clean_recursively(item, pseudonyms, shift)
    elif element.VR in DATE_VRS and element.keyword not in UNSHIFTED_DATES:
        _clean_by_vr(ds, element, pseudonyms, shift)
    elif action in ("Z", "Z/D"):
        # An empty date, not the library's dummy 00010101 (Z allows a zero-length value).
        if element.VR in DATE_VRS:
            element.value = None
        else:
            empty_element(element)
    elif action == "D":
        replace_element(element)
    else:  # U, X/Z/U*, or not in the table: by VR
        _clean_by_vr(ds, element, pseudonyms, shift)


def _clean_by_vr(
    ds: Dataset, element: DataElement, pseudonyms: Pseudonymizer, shift: dt.timedelta
) -> None:
    if element.VR in FREE_TEXT_VRS or element.VR == "PN":
        del ds[element.tag]
    elif element.VR == "UI":
        element.value = _pseudonymous_uids(element.value, pseudonyms)
    elif element.VR == "DA":
        element.value = _map_values(element.value, lambda v: _shift_date(v, shift))
    elif element.VR == "DT":
        element.value = _map_values(element.value, lambda v: _shift_date(v[:8], shift))
    elif element.VR == "TM":
        element.value = None


def _map_values(value: object, change: Callable[[str], str]) -> object:
    if value is None or value == "":
        return value
    if isinstance(value, list | pydicom.multival.MultiValue):
        return [change(str(v)) for v in value]
    return change(str(value))


def _pseudonymous_uids(value: object, pseudonyms: Pseudonymizer) -> object:
    return _map_values(
        value, lambda v: v if v.startswith(STANDARD_UID_ROOT) or not v else pseudonyms.uid(v)
    )


def _shift_date(value: str, shift: dt.timedelta) -> str:
    try:
        date = dt.datetime.strptime(value.strip()[:8], "%Y%m%d").date()
    except ValueError:
        return ""  # an unparseable date cannot be shifted, and must not leak
    return (date + shift).strftime("%Y%m%d")
