from __future__ import annotations

from pathlib import Path

import numpy as np
import pydicom
import pytest
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence

from annotations.imaging.deid import Pseudonymizer, deidentify_dataset, deidentify_series
from annotations.imaging.dicom import VolumeError, load_dicom_series
from annotations.imaging.synthct import write_synthetic_series
from tests.imaging.test_ct_loading import CT_SMALL, FEET_FIRST, ramp_volume, real_ct_series

PHI = {
    "InstitutionName": "St. Example Hospital",
    "InstitutionAddress": "1 Harbour Road, Exampletown",
    "ReferringPhysicianName": "HOUSE^GREGORY",
    "PerformingPhysicianName": "WILSON^JAMES",
    "OperatorsName": "SMITH^ANNA",
    "AccessionNumber": "ACC778899",
    "StudyID": "STUDY4242",
    "OtherPatientIDs": "OLDMRN5555",
    "PatientBirthDate": "19610723",
    "PatientSex": "M",
    "PatientAge": "062Y",
    "StudyDate": "20230415",
    "SeriesDate": "20230416",
    "AcquisitionDate": "20230417",
    "ContentDate": "20230418",
    "StudyTime": "101112.123456",  # the dot keeps it from matching digits of a UID
    "AcquisitionDateTime": "20230417093015",
    "DeviceSerialNumber": "SN-XK-31337",
    "StationName": "CTROOM7",
    "StudyDescription": "CT ABDOMEN FOR DOE",
    "ImageComments": "call Dr Quinn on 555-0199",
}
SENSITIVE = ["DOE^JOHN", "MRN12345", *PHI.values()]
SENSITIVE.remove("M")  # a single letter occurs in any file by chance


def _phi_series(folder: Path) -> tuple[list[Path], np.ndarray]:
    hu = ramp_volume((4, 8, 8))
    paths = write_synthetic_series(
        folder,
        hu,
        spacing=(0.7, 0.7, 2.5),
        origin=(-250.3, 180.7, 1200.5),
        direction=FEET_FIRST,
        phase="venous",
        patient_name="DOE^JOHN",
        patient_id="MRN12345",
        shuffle_names=True,
        extra_tags=PHI,
    )
    for path in paths:  # a private tag and a reference to another instance, as scanners write
        ds = pydicom.dcmread(path)
        block = ds.private_block(0x0009, "ACME CT", create=True)
        block.add_new(0x01, "LO", "DOE^JOHN private copy")
        reference = Dataset()
        reference.ReferencedSOPClassUID = ds.SOPClassUID
        reference.ReferencedSOPInstanceUID = ds.SOPInstanceUID
        ds.ReferencedImageSequence = Sequence([reference])
        ds.save_as(path)
    return paths, hu


def test_no_identifying_string_survives_anywhere_in_the_output_bytes(tmp_path):
    sources, _ = _phi_series(tmp_path / "src")
    originals = [pydicom.dcmread(p) for p in sources]
    uids = {str(ds.SOPInstanceUID) for ds in originals}
    uids |= {str(originals[0].StudyInstanceUID), str(originals[0].SeriesInstanceUID)}
    uids.add(str(originals[0].FrameOfReferenceUID))
    written = deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("secret"))
    assert len(written) == 4
    for path in written:
        data = path.read_bytes()
        for text in [*SENSITIVE, *uids]:
            assert text.encode() not in data, f"{text!r} leaked into {path.name}"


def test_voxels_and_geometry_are_unchanged(tmp_path):
    _, hu = _phi_series(tmp_path / "src")
    deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("secret"))
    before = load_dicom_series(tmp_path / "src")
    after = load_dicom_series(tmp_path / "dst")
    assert np.array_equal(after.voxels, hu)
    assert (after.spacing, after.origin, after.direction) == (
        before.spacing,
        before.origin,
        before.direction,
    )


def test_the_output_is_marked_and_keeps_what_the_ct_iod_needs(tmp_path):
    _phi_series(tmp_path / "src")
    written = deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("secret"))
    ds = pydicom.dcmread(written[0])
    assert ds.PatientIdentityRemoved == "YES"
    assert ds.DeidentificationMethodCodeSequence[0].CodeValue == "113100"
    assert ds.PatientID.startswith("ANON-") and str(ds.PatientName).startswith("ANON^")
    assert ds.PatientBirthDate == "" and ds.AccessionNumber == "" and ds.StudyID == ""
    assert "InstitutionName" not in ds and "OtherPatientIDs" not in ds
    assert ds.SOPClassUID == pydicom.uid.CTImageStorage  # standard UIDs are not pseudonymised
    assert ds.file_meta.MediaStorageSOPInstanceUID == ds.SOPInstanceUID
    assert ds.ReferencedImageSequence[0].ReferencedSOPInstanceUID == ds.SOPInstanceUID
    assert written[0].name == f"{ds.SOPInstanceUID}.dcm"
    assert not any(element.tag.is_private for element in ds)


def test_pseudonyms_are_consistent_across_imports_with_the_same_secret(tmp_path):
    _phi_series(tmp_path / "src")
    first = deidentify_series(tmp_path / "src", tmp_path / "one", Pseudonymizer("secret"))
    second = deidentify_series(tmp_path / "src", tmp_path / "two", Pseudonymizer("secret"))
    other = deidentify_series(tmp_path / "src", tmp_path / "three", Pseudonymizer("another"))
    assert [p.name for p in first] == [p.name for p in second]
    assert first[0].read_bytes() == second[0].read_bytes()
    a, b = pydicom.dcmread(first[0]), pydicom.dcmread(other[0])
    assert a.StudyDate != "20230415"
    assert a.SeriesInstanceUID != b.SeriesInstanceUID and a.PatientID != b.PatientID
    series = {pydicom.dcmread(p).SeriesInstanceUID for p in first}
    assert len(series) == 1  # one series stays one series


def test_dates_keep_their_intervals_within_a_patient(tmp_path):
    _phi_series(tmp_path / "src")
    written = deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("secret"))
    ds = pydicom.dcmread(written[0])
    study, series = (
        np.datetime64(f"{d[:4]}-{d[4:6]}-{d[6:]}") for d in (ds.StudyDate, ds.SeriesDate)
    )
    assert (series - study).astype(int) == 1
    assert ds.AcquisitionDateTime == ds.AcquisitionDate  # the time part is dropped
    assert ds.StudyTime == ""


def test_it_cleans_pydicoms_real_ct_file_and_keeps_its_hu(tmp_path):
    real_ct_series(tmp_path / "src", count=2)
    written = deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("k"))
    for path in written:
        data = path.read_bytes()
        for text in (b"CompressedSamples", b"1CT1", b"ABCD1234", b"JFK IMAGING", b"GEMS_"):
            assert text not in data
    source = pydicom.dcmread(CT_SMALL)
    cleaned = load_dicom_series(tmp_path / "dst")
    expected = source.pixel_array.astype(np.int32) - 1024
    assert np.array_equal(cleaned.voxels[0], expected)


def test_deidentify_dataset_works_in_memory_without_file_meta():
    ds = Dataset()
    ds.PatientName, ds.PatientID = "DOE^JOHN", "MRN12345"
    ds.StudyInstanceUID = "1.2.3.4.5"
    deidentify_dataset(ds, Pseudonymizer("s"))
    assert ds.StudyInstanceUID == Pseudonymizer("s").uid("1.2.3.4.5")
    assert ds.StudyInstanceUID.startswith("2.25.")
    assert "DOE" not in str(ds.PatientName)


def test_it_refuses_an_empty_secret():
    with pytest.raises(ValueError, match="secret"):
        Pseudonymizer("")


def test_it_reports_a_file_that_is_not_dicom(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "readme.txt").write_text("hello")
    with pytest.raises(VolumeError, match="readme.txt"):
        deidentify_series(tmp_path / "src", tmp_path / "dst", Pseudonymizer("s"))
