"""A benchmark's 3D boxes for 3D Slicer, OHIF and MONAI: per case and phase a NIfTI label map
and a DICOM SEG referencing the de-identified series (``imaging.box_volumes`` writes them).

A release writes them under ``boxes/`` when ``ExportOptions.box_volumes`` is set (without the
targets of withheld items); ``manage.py export_box_volumes`` writes those of one benchmark.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.text import get_valid_filename

from annotations.formats.taskfiles import hidden_keys, numbers
from annotations.imaging import box_volumes as writer
from annotations.models import Benchmark, Box, BoxLabel, Case, Volume
from annotations.selectors.cases import phase_sorted

BOXES_FOLDER = "boxes"


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _phase_boxes(volume: Volume, boxes: list[Box]) -> writer.PhaseBoxes:
    return writer.PhaseBoxes(
        shape=volume.shape,
        spacing=volume.spacing,
        origin=volume.origin,
        direction=volume.direction,
        boxes=[(box.label, box.voxel) for box in boxes],
    )


def box_volumes_write(
    folder: Path,
    cases: Iterable[Case],
    hidden: set[tuple] = frozenset(),  # type: ignore[assignment]
) -> dict[str, Any]:
    """Write ``folder/boxes/<case>/<phase>.nii.gz`` (and ``<phase>_seg.dcm`` when the phase
    keeps its de-identified DICOM) for every phase of ``cases`` with kept boxes, leaving out
    the 3D keys in ``hidden`` (``formats.taskfiles.hidden_keys``). Returns the manifest entry:
    the label numbers and names, and per file its case, phase and md5."""
    names = {value: str(label) for value, label in BoxLabel.choices}
    files = []
    for case in cases:
        volumes = phase_sorted(Volume.objects.filter(case=case))
        kept = Box.objects.filter(volume__in=volumes).kept().order_by("pk")
        for volume in volumes:
            boxes = [
                box
                for box in kept
                if box.volume_id == volume.pk
                and (case.pk, volume.phase, box.label, numbers(box.voxel)) not in hidden
            ]
            if not boxes:
                continue
            phase = _phase_boxes(volume, boxes)
            relative = Path(BOXES_FOLDER) / get_valid_filename(case.case_id)
            nifti = writer.write_nifti_labels(phase, folder / relative / f"{volume.phase}.nii.gz")
            entry = {
                "case": case.case_id,
                "phase": volume.phase,
                "boxes": len(boxes),
                "nifti": {"path": str(relative / nifti.name), "md5": _md5(nifti)},
            }
            series = Path(settings.MEDIA_ROOT) / volume.dicom_path if volume.dicom_path else None
            if series is not None and series.is_dir():
                seg = writer.write_dicom_seg(
                    phase,
                    series,
                    folder / relative / f"{volume.phase}_seg.dcm",
                    label_names=names,
                    series_description=f"{case.case_id} {volume.phase} boxes",
                )
                entry["seg"] = {"path": str(relative / seg.name), "md5": _md5(seg)}
                entry["series_uid"] = volume.series_uid
            files.append(entry)
    return {
        "folder": f"{BOXES_FOLDER}/",
        "labels": {str(value): names[label] for label, value in writer.LABEL_VALUES.items()},
        "label_ids": {str(value): label for label, value in writer.LABEL_VALUES.items()},
        "coordinates": "NIfTI affine in RAS (LPS x, y negated); SEG in DICOM patient LPS",
        "overlap": "NIfTI: the smaller box wins where boxes overlap; SEG: one segment per label",
        "files": files,
    }


def release_box_volumes_write(folder: Path, items, hidden: list[dict]) -> dict[str, Any]:
    """A release's ``boxes/``: the phases of the cases of its ``items`` (a queryset), without
    the targets of withheld items (``hidden``: ``release_rows.withheld_box_targets``)."""
    cases = Case.objects.filter(pk__in=items.exclude(case=None).values("case")).order_by("case_id")
    return box_volumes_write(folder, cases, hidden_keys(hidden)[1])


def benchmark_box_volumes_export(benchmark: Benchmark, out_dir: Path) -> dict[str, Any]:
    """Every kept 3D box of ``benchmark`` to ``out_dir`` (which appears whole or not at all)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} exists and is not empty")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        cases = Case.objects.filter(benchmark=benchmark).order_by("case_id")
        entry = box_volumes_write(temp, cases)
        if out_dir.exists():
            out_dir.rmdir()
        os.rename(temp, out_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return entry
