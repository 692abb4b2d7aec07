"""Importing Gastric-X cases: de-identified CT, voxel caches, indicators, boxes and the items of
every task (`gastricx_items`).

All-or-nothing in two stages. Stage one reads every case folder, loads and de-identifies every
phase into MEDIA_ROOT, writes the voxel caches and stages each endoscopy image (checked, without
its metadata), collecting every problem; stage two writes the rows in one transaction. Any
problem raises ``ImportFailed`` after removing every file written (the volume folder of the
import and any image file whose row never committed).
"""

from __future__ import annotations

import math
import secrets
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext

from annotations.formats.cells import metadata_warnings
from annotations.formats.errors import FormatError, RowProblem
from annotations.formats.gastricx import (
    CaseData,
    all_problems,
    read_gastricx_root,
    read_gastricx_zip,
    tnm_label_sets,
    validate_case_volumes,
)
from annotations.imaging import chunks, ct
from annotations.imaging.images import ImageError, prepare_image
from annotations.models import (
    Benchmark,
    Box,
    BoxRevision,
    BoxState,
    Case,
    Family,
    Indicator,
    Item,
    Volume,
)
from annotations.services.errors import DomainError
from annotations.services.gastricx_items import case_items_create, label_set_problems
from annotations.services.images import ImageStaging, import_work_dir, staged_images_discard
from annotations.services.imports import ImportFailed, ImportReport, ImportResult, import_limits
from annotations.services.volume_files import VOLUMES_FOLDER


@dataclass(frozen=True)
class PhaseFiles:
    """One loaded phase: where its files went and its geometry (the voxels stay on disk)."""

    shape: tuple[int, int, int]
    spacing: tuple[float, float, float]
    origin: tuple[float, float, float]
    direction: tuple[float, ...]
    cache_path: str
    dicom_path: str
    series_uid: str
    hu_min: int
    hu_max: int


@dataclass
class LoadedCase:
    data: CaseData
    phases: dict[str, PhaseFiles] = field(default_factory=dict)
    endoscopy: str | None = None  # sha256 of the staged image


def gastricx_import(
    *,
    path: Path,
    name: str,
    user=None,
    description: str = "",
    progress: Callable[[int], None] | None = None,
) -> Benchmark:
    """Import Gastric-X cases as a new benchmark (see `gastricx_import_run`)."""
    return gastricx_import_run(
        path=path, name=name, user=user, description=description, progress=progress
    ).benchmark


def gastricx_import_run(
    *,
    path: Path,
    name: str,
    user=None,
    description: str = "",
    progress: Callable[[int], None] | None = None,
    before_commit: Callable[[ImportResult], None] | None = None,
    work_dir: Path | None = None,
) -> ImportResult:
    """Import a root folder of Gastric-X case folders (or a ``.zip`` of it) as a new benchmark.

    DICOM is de-identified (``settings.DEID_SECRET`` keys the pseudonyms) before it is stored;
    only the de-identified copies and the int16 voxel caches stay under MEDIA_ROOT; endoscopy
    images lose their metadata (the report says which). Raises ``ImportFailed`` listing every
    problem; then neither rows nor files are left behind. `progress(1)` follows each case;
    `before_commit` runs inside the final transaction (see `benchmark_import_run`). `work_dir`
    (a job attempt's folder) holds the staged images, the zip's extracted files (raw DICOM, with
    its patient data) and a note of the volumes folder being written, so that the next attempt
    after a killed worker removes all three (`import_attempt_discard`).
    """
    if Benchmark.objects.filter(name=name).exists():
        raise DomainError(gettext("A benchmark named '%(name)s' already exists.") % {"name": name})
    deid_secret()  # refused before anything is read or written
    relative_root = volumes_root(name)
    media_root = Path(settings.MEDIA_ROOT)
    staging = ImageStaging(work_dir or import_work_dir(f"run-{uuid.uuid4().hex}"))
    note = staging.folder / ATTEMPT_NOTE
    note.mkdir(exist_ok=True)
    (note / "volumes").write_text(relative_root)
    report = ImportReport()
    try:
        with tempfile.TemporaryDirectory(prefix="gastricx-", dir=staging.folder) as scratch:
            cases = _read_cases(Path(path), Path(scratch))
            loaded = _load_all(cases, media_root, relative_root, staging, report, progress)
            with transaction.atomic():
                benchmark = write_case_rows(loaded, name, user, description, staging.commit())
                items = Item.objects.filter(benchmark=benchmark).count()  # every task's
                result = ImportResult(benchmark, items, report)
                if before_commit is not None:
                    before_commit(result)  # a job ends with the rows, or neither does
    except BaseException as error:
        shutil.rmtree(media_root / relative_root, ignore_errors=True)
        staged_images_discard(staging.folder)
        if isinstance(error, FormatError):
            raise ImportFailed(error.problems, report) from error
        if isinstance(error, ImportFailed):
            error.report = report
        raise
    staging.remove()
    return result


# A subfolder of an attempt's staging folder (whose files are staged images): what else the
# attempt writes, for `import_attempt_discard`.
ATTEMPT_NOTE = "attempt"


def import_attempt_discard(folder: Path) -> int:
    """Undo what a dead import attempt left in `folder` and beside it: its staged images, the
    raw files it extracted, and, for a Gastric-X import, the volumes folder it was writing
    (unless committed rows use it). Returns how many placed image files went."""
    # A parallel Gastric-X import keeps each case's attempt in a subfolder of the job's.
    for part in folder.glob("case-*"):
        if part.is_dir():
            import_attempt_discard(part)
    noted = folder / ATTEMPT_NOTE / "volumes"
    if noted.is_file():
        relative = noted.read_text().strip()
        committed = Volume.objects.filter(cache_path__startswith=f"{relative}/").exists()
        if relative.startswith(f"{VOLUMES_FOLDER}/") and "/.." not in relative and not committed:
            shutil.rmtree(Path(settings.MEDIA_ROOT) / relative, ignore_errors=True)
    return staged_images_discard(folder)  # the whole folder goes, extracted files included


def earlier_attempts_discard(folder: Path) -> int:
    """Undo what the earlier attempts of `folder` left beside it: attempt folders are named
    `STEM-N`, and every sibling `STEM-M` with M < N is a dead attempt's (`import_attempt_discard`
    each). Returns how many placed image files went."""
    stem, _dash, current = folder.name.rpartition("-")
    removed = 0
    for earlier in folder.parent.glob(f"{stem}-*"):
        attempt = earlier.name.rsplit("-", 1)[-1]
        if attempt.isdigit() and int(attempt) < int(current):
            removed += import_attempt_discard(earlier)
    return removed


def attempt_volumes_folder(folder: Path) -> str | None:
    """The volumes folder (relative to MEDIA_ROOT) an import attempt noted it is writing."""
    noted = folder / ATTEMPT_NOTE / "volumes"
    return noted.read_text().strip() if noted.is_file() else None


def _read_cases(path: Path, scratch: Path) -> list[CaseData]:
    if path.is_file():
        cases = list(read_gastricx_zip(path, scratch / "extracted"))
    else:
        cases = list(read_gastricx_root(path))
    problems = all_problems(cases) + label_set_problems(cases)
    if problems:
        raise ImportFailed(problems)
    return cases


def deid_secret() -> str:
    """The key of DICOM pseudonyms; production must set its own (never SECRET_KEY)."""
    if not settings.DEID_SECRET:
        raise DomainError(
            gettext(
                "DEID_SECRET is not set: DICOM cannot be de-identified. Set DEID_SECRET (a long "
                "random string kept with the deployment's secrets) and import again."
            ),
            code="deid_secret_missing",
        )
    return settings.DEID_SECRET


def _load_all(
    cases: list[CaseData],
    media_root: Path,
    relative_root: str,
    staging: ImageStaging,
    report: ImportReport,
    progress: Callable[[int], None] | None,
) -> list[LoadedCase]:
    pseudonymizer = ct.Pseudonymizer(deid_secret())
    problems: list[RowProblem] = []
    loaded = []
    for case in cases:
        folder = case_volumes_folder(relative_root, case)
        result, case_problems = load_case(case, media_root, folder, staging, report, pseudonymizer)
        problems += case_problems
        loaded.append(result)
        if progress:
            progress(1)
    if problems:
        raise ImportFailed(problems)
    return loaded


def volumes_root(name: str) -> str:
    """A fresh volumes folder (relative to MEDIA_ROOT) for one import of benchmark `name`: a
    token per import, so a failed import removes its folder without touching others'."""
    return f"{VOLUMES_FOLDER}/{slugify(name)[:60] or 'benchmark'}-{secrets.token_hex(4)}"


def case_volumes_folder(relative_root: str, case: CaseData) -> str:
    return f"{relative_root}/{case.row:04d}-{slugify(case.case_id)[:40] or 'case'}"


def load_case(
    case: CaseData,
    media_root: Path,
    folder: str,
    staging: ImageStaging,
    report: ImportReport,
    pseudonymizer: ct.Pseudonymizer,
) -> tuple[LoadedCase, list[RowProblem]]:
    """Store one case's phases under `folder` and stage its endoscopy image; its problems."""
    problems: list[RowProblem] = []
    result = LoadedCase(case)
    if case.endoscopy is not None:
        result.endoscopy = stage_endoscopy(case, staging, report, problems)
    for phase, source in case.phases.items():
        try:
            result.phases[phase] = load_phase(
                source, media_root, f"{folder}/{phase}", pseudonymizer
            )
        except ct.VolumeError as error:
            problems.append(RowProblem(case.row, f"ct/{phase}", str(error), "bad_ct"))
    shapes = {phase: files.shape for phase, files in result.phases.items()}
    problems += [p for p in validate_case_volumes(case, shapes) if not p.reason.startswith("no ")]
    return result, problems


def stage_endoscopy(
    case: CaseData, staging: ImageStaging, report: ImportReport, problems: list[RowProblem]
) -> str | None:
    """The case's endoscopy image, checked and without metadata, staged; or a problem."""
    assert case.endoscopy is not None
    limits = import_limits()
    try:
        size = case.endoscopy.stat().st_size
        if size > limits.max_cell_bytes:
            raise ImageError(
                f"image file of {size:,} bytes is over the limit of {limits.max_cell_bytes:,}"
            )
        prepared = prepare_image(case.endoscopy.read_bytes(), max_pixels=limits.max_image_pixels)
    except (ImageError, OSError) as error:
        problems.append(RowProblem(case.row, "endoscopy", str(error), "bad_endoscopy"))
        return None
    report.add(metadata_warnings(case.row, "endoscopy", [prepared.removed]))
    return staging.add(prepared)


def load_phase(
    source: Path, media_root: Path, relative: str, pseudonymizer: ct.Pseudonymizer
) -> PhaseFiles:
    """Load one phase and store it once: its voxels as chunks (``imaging.chunks``: slices,
    streaming and exports read them) and its de-identified DICOM headers without pixels (what
    a DICOM SEG references; ``series_store.rebuild_series`` makes the whole series again)."""
    if source.is_dir():
        # Loading the original first validates it (truncation, mixed series, spacing) before
        # anything is written; the stored copies keep pixels and geometry exactly.
        volume = ct.load_dicom_series(source)
        ct.deidentify_series(source, media_root / relative / "dicom", pseudonymizer, pixels=False)
        dicom_path = f"{relative}/dicom"
        series_uid = pseudonymizer.uid(volume.series_uid) if volume.series_uid else ""
    else:
        volume = ct.load_nifti(source)
        dicom_path, series_uid = "", ""
    cache_path = f"{relative}/voxels"
    chunks.write_chunked_volume([volume.voxels], media_root / cache_path)
    return PhaseFiles(
        shape=volume.shape,
        spacing=tuple(float(v) for v in volume.spacing),  # type: ignore[arg-type]
        origin=tuple(float(v) for v in volume.origin),  # type: ignore[arg-type]
        direction=tuple(float(v) for v in volume.direction),
        cache_path=cache_path,
        dicom_path=dicom_path,
        series_uid=series_uid,
        hu_min=int(np.min(volume.voxels)),
        hu_max=int(np.max(volume.voxels)),
    )


def write_case_rows(
    loaded: list[LoadedCase], name: str, user, description: str, image_ids: dict[str, int]
) -> Benchmark:
    benchmark = Benchmark.objects.create(
        name=name,
        family=Family.GASTRICX,
        description=description,
        created_by=user,
        columns=["index", "image", "question", "A", "B", "C", "D", "answer", "category", "task"],
    )
    next_index = 1
    letters: set[int] = set()
    for entry in loaded:
        case, boxes = _create_case(benchmark, entry, user, image_ids)
        next_index = case_items_create(
            case=case, data=entry.data, boxes=boxes, next_index=next_index, user=user
        )
        letters.update(len(v.options) for v in entry.data.vqa)
    benchmark.option_letters = [chr(ord("A") + i) for i in range(max(letters, default=4))]
    tasks = sorted(set(Item.objects.filter(benchmark=benchmark).values_list("task", flat=True)))
    tasks = [task for task in tasks if task]
    benchmark.taxonomy = {"task": tasks, "category": tasks} if tasks else {}
    codes = [e.data.tnm_labels.tnm for e in loaded if e.data.tnm_labels is not None]
    benchmark.label_sets = tnm_label_sets(codes) if codes else {}
    benchmark.save(update_fields=["option_letters", "taxonomy", "label_sets"])
    return benchmark


def _create_case(
    benchmark: Benchmark, entry: LoadedCase, user, image_ids: dict[str, int]
) -> tuple[Case, list[Box]]:
    data = entry.data
    case = Case.objects.create(
        benchmark=benchmark,
        case_id=data.case_id,
        tnm=data.tnm or "",
        reports={kind: text for kind, text in data.reports.items() if text},
        extra=data.extra,
        endoscopy_image_id=image_ids[entry.endoscopy] if entry.endoscopy else None,
    )
    Indicator.objects.bulk_create(_indicators(case, data))
    volumes = {
        phase: Volume.objects.create(case=case, phase=phase, **_volume_fields(files))
        for phase, files in entry.phases.items()
    }
    return case, _create_imported_boxes(data, volumes, user)


def _indicators(case: Case, data: CaseData) -> list[Indicator]:
    rows = []
    for position, indicator in enumerate(data.indicators):
        low, high = indicator.reference_range or (None, None)
        value = _number(indicator.value)
        rows.append(
            Indicator(
                case=case,
                position=position,
                name=indicator.name,
                value=value,
                value_text=_text_value(indicator.value) if value is None else "",
                unit=indicator.unit or "",
                reference_low=low,
                reference_high=high,
            )
        )
    return rows


def _text_value(value: float | str | None) -> str:
    return value.strip() if isinstance(value, str) else ""


def _number(value: float | str | None) -> float | None:
    # Labs sometimes write "12.5" as text; a value like "<0.5" has no single number (it is kept
    # as text), nor has "nan" or "inf", which no export could write as JSON.
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _volume_fields(files: PhaseFiles) -> dict:
    size_z, size_y, size_x = files.shape
    return {
        "size_x": size_x,
        "size_y": size_y,
        "size_z": size_z,
        "spacing": list(files.spacing),
        "origin": list(files.origin),
        "direction": list(files.direction),
        "cache_path": files.cache_path,
        "dicom_path": files.dicom_path,
        "series_uid": files.series_uid,
        "hu_min": files.hu_min,
        "hu_max": files.hu_max,
    }


def _create_imported_boxes(data: CaseData, volumes: dict[str, Volume], user) -> list[Box]:
    boxes = []
    for spec in data.boxes:
        volume = volumes[spec.phase]
        x0, y0, z0, x1, y1, z1 = spec.voxel
        box = Box.objects.create(
            volume=volume,
            label=spec.label,
            x0=x0,
            y0=y0,
            z0=z0,
            x1=x1,
            y1=y1,
            z1=z1,
            mm=ct.box_voxel_to_mm(spec.voxel, ct.VolumeGeometry.of(volume)),
            source="imported",
            state=BoxState.PROPOSED,
            author=user,
        )
        BoxRevision.objects.create(
            box=box,
            version=1,
            coords=box.voxel,
            mm=box.mm,
            label=box.label,
            state=box.state,
            reason="imported",
            author=user,
        )
        boxes.append(box)
    return boxes
