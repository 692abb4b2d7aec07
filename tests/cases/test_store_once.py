"""Stored once: an import keeps compressed chunks and DICOM headers without pixels, and volumes
imported before chunks (DICOM with pixels, voxels.npy, voxels.raw.gz) are converted by
`manage.py store_volumes_once` without changing a voxel."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pydicom
from django.conf import settings
from django.core.management import call_command

from annotations.imaging import chunks, ct
from annotations.models import Volume
from annotations.selectors.cases import memmaps, volume_voxels


def test_an_import_stores_chunks_and_headers_only(small_case):
    media = Path(settings.MEDIA_ROOT)
    for volume in small_case.volumes.all():
        assert chunks.is_chunked_volume(media / volume.cache_path)
        phase_folder = (media / volume.cache_path).parent
        assert sorted(p.name for p in phase_folder.iterdir()) == ["dicom", "voxels"]
        headers = list((media / volume.dicom_path).iterdir())
        assert len(headers) == volume.size_z
        assert all("PixelData" not in pydicom.dcmread(path) for path in headers)


def _as_before_chunks(volume: Volume) -> np.ndarray:
    """Put ``volume`` back the way imports stored it before chunks; returns its voxels."""
    media = Path(settings.MEDIA_ROOT)
    voxels = np.asarray(volume_voxels(volume))
    folder = (media / volume.cache_path).parent
    ct.write_voxel_cache(voxels, folder / "voxels.npy")
    (folder / "voxels.raw.gz").write_bytes(gzip.compress(voxels.astype("<i2").tobytes()))
    for path in (media / volume.dicom_path).iterdir():  # pixels back into the DICOM
        ds = pydicom.dcmread(path)
        z = round(
            ct.lps_to_index(
                ds.ImagePositionPatient, volume.spacing, volume.origin, volume.direction
            )[2]
        )
        ds.PixelData = (voxels[z].astype(np.int32) + 1024).astype(np.uint16).tobytes()
        ds["PixelData"].VR = "OW"
        ds.save_as(path)
    import shutil

    shutil.rmtree(media / volume.cache_path)
    Volume.objects.filter(pk=volume.pk).update(
        cache_path=str(Path(volume.cache_path).parent / "voxels.npy")
    )
    memmaps.clear()
    return voxels


def test_the_command_converts_older_volumes_without_changing_a_voxel(
    small_case, capsys, django_capture_on_commit_callbacks
):
    volume = small_case.volumes.get(phase="venous")
    voxels = _as_before_chunks(volume)
    volume.refresh_from_db()
    assert volume.cache_path.endswith(".npy")
    assert np.array_equal(np.asarray(volume_voxels(volume)), voxels)  # still served meanwhile

    with django_capture_on_commit_callbacks(execute=True):  # the old files go once committed
        call_command("store_volumes_once")
    out = capsys.readouterr().out
    assert out.startswith("1 volumes converted")
    volume.refresh_from_db()
    media = Path(settings.MEDIA_ROOT)
    assert chunks.is_chunked_volume(media / volume.cache_path)
    assert sorted(p.name for p in (media / volume.cache_path).parent.iterdir()) == [
        "dicom",
        "voxels",
    ]
    assert all(
        "PixelData" not in pydicom.dcmread(path) for path in (media / volume.dicom_path).iterdir()
    )
    memmaps.clear()
    assert np.array_equal(np.asarray(volume_voxels(volume)), voxels)
    call_command("store_volumes_once")  # again: nothing left to do
    assert capsys.readouterr().out.startswith("0 volumes converted")
