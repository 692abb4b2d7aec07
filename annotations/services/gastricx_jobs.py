"""A Gastric-X import as a chunked job: one chunk per case, taken by any worker.

Planning (the job's task) reads only the zip's layout and each `case.json` (a "skeleton" in the
job's attempt folder `imports/job-<id>-<attempt>/`), checks every case as a one-task import does,
and plans a chunk per case. A case's chunk extracts only its own folder from the zip into
`case-<number>-<attempt>/` beside the skeleton, stores the phases under the import's volumes
folder and stages the endoscopy image there, then removes the extracted raw DICOM; its problems
and what it stored go into the chunk's result. The chunk that ends last finishes the job: with
any problem in any case, every case's files, the skeleton and the upload are removed and the job
fails with every problem; otherwise the rows are written in one transaction that also marks the
job done (the job ends with the rows, or neither does), and the attempt folder and upload go.

Nothing of a patient outlives the job: a chunk that fails removes its own files and those of
the cases already done; a chunk whose worker died is undone by its next attempt (the case
folder notes the volumes it was writing); and `media_sweep` removes the whole attempt folder
(chunks included, `import_attempt_discard`) and the upload of any import that ended.
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import asdict
from pathlib import Path, PurePosixPath
from typing import NoReturn

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from annotations.formats.errors import FormatError, RowProblem, RowWarning
from annotations.formats.gastricx import all_problems, read_case_folder, read_gastricx_root
from annotations.formats.safezip import extract_zip
from annotations.imaging import ct
from annotations.models import Benchmark, Item, Job, JobChunk, JobStatus
from annotations.services.cases import (
    ATTEMPT_NOTE,
    LoadedCase,
    PhaseFiles,
    case_volumes_folder,
    deid_secret,
    earlier_attempts_discard,
    import_attempt_discard,
    load_case,
    volumes_root,
    write_case_rows,
)
from annotations.services.errors import DomainError
from annotations.services.gastricx_items import label_set_problems
from annotations.services.images import ImageStaging, import_work_dir
from annotations.services.imports import ImportFailed, ImportReport
from annotations.services.jobs import Check, ChunkedWork, JobRefused, PlannedChunk, Progress
from annotations.services.recovery import LeaseLost

MAX_LISTED_PROBLEMS = 500
SKELETON = "skeleton"


def _skeleton_entry(name: str) -> str:
    """What planning extracts of a zip entry: each case.json whole, a phase's DICOM files only
    as their folder, any other file (NIfTI, endoscopy) as an empty file of its name."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if parts and parts[-1] == "case.json":
        return "whole"
    if "ct" in parts[:-2]:
        return "folder"
    return "empty"


def _note_volumes(folder: Path, relative: str) -> None:
    note = folder / ATTEMPT_NOTE
    note.mkdir(parents=True, exist_ok=True)
    (note / "volumes").write_text(relative)


def gastricx_import_plan(job: Job) -> list[PlannedChunk]:
    params = job.params
    upload = Path(params["path"])
    job_dir = import_work_dir(f"job-{job.pk}-{job.attempts}")
    earlier_attempts_discard(job_dir)  # what a dead attempt left, its cases' included
    if Benchmark.objects.filter(name=params["name"]).exists():
        message = gettext("A benchmark with this name already exists.")
        raise JobRefused(message, result={"code": "name_taken"}, code="name_taken")
    deid_secret()  # refused before anything is read or written
    if not upload.is_file():
        raise DomainError(
            gettext("The uploaded file is gone; upload it again."), code="upload_gone"
        )
    relative_root = volumes_root(params["name"])
    _note_volumes(job_dir, relative_root)
    skeleton = job_dir / SKELETON
    try:
        extract_zip(upload, skeleton, select=_skeleton_entry)
        cases = list(read_gastricx_root(skeleton))
        problems = all_problems(cases) + label_set_problems(cases)
        if problems:
            raise ImportFailed(problems)
    except FormatError as error:
        _refuse(job, job_dir, ImportFailed(error.problems))
    except ImportFailed as error:
        _refuse(job, job_dir, error)
    return [
        PlannedChunk(
            params={
                "row": case.row,
                "case_id": case.case_id,
                "prefix": case.folder.relative_to(skeleton).as_posix(),
                "job_dir": job_dir.name,
                "volumes": case_volumes_folder(relative_root, case),
            },
            total=1,
        )
        for case in cases
    ]


def _entries_of(prefix: str):
    def select(name: str) -> str:
        name = name.replace("\\", "/")
        return "whole" if prefix in ("", ".") or name.startswith(f"{prefix}/") else "skip"

    return select


def gastricx_import_work(job: Job, chunk: JobChunk, progress: Progress, check: Check) -> dict:
    """Load one case from the zip (see the module); its result says what was stored."""
    params = chunk.params
    job_dir = import_work_dir(params["job_dir"])
    own = job_dir / f"case-{chunk.number:05d}-{chunk.attempts}"
    earlier_attempts_discard(own)  # a dead attempt's raw DICOM, volumes, images
    # A volumes folder per attempt too: a replaced worker that was only slow removes its own
    # files when it finds out, never those its successor is writing.
    volumes = params["volumes"] if chunk.attempts == 1 else f"{params['volumes']}-{chunk.attempts}"
    extracted = own / "extracted"
    try:
        check()
        staging = ImageStaging(own)
        _note_volumes(own, volumes)
        extract_zip(Path(job.params["path"]), extracted, select=_entries_of(params["prefix"]))
        case = read_case_folder(extracted / params["prefix"], row=params["row"])
        report = ImportReport()
        pseudonymizer = ct.Pseudonymizer(deid_secret())
        media_root = Path(settings.MEDIA_ROOT)
        loaded, problems = load_case(case, media_root, volumes, staging, report, pseudonymizer)
        check()
    except BaseException as error:
        import_attempt_discard(own)
        if not isinstance(error, LeaseLost):
            # This case fails the job (or it ended): the cases already done go with it now,
            # and the plan's copy of every case.json.
            _discard_done_cases(chunk)
            shutil.rmtree(job_dir / SKELETON, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(extracted, ignore_errors=True)  # the raw DICOM, at once
    progress(1)
    return {
        "worker": f"{socket.gethostname()}:{os.getpid()}",  # who took the case (ops, tests)
        "folder": own.name,
        "problems": [asdict(problem) for problem in problems],
        "warnings": [asdict(warning) for warning in report.warnings],
        "phases": {phase: asdict(files) for phase, files in loaded.phases.items()},
        "endoscopy": loaded.endoscopy,
        "staged": staging.described(),
    }


def _discard_done_cases(chunk: JobChunk) -> None:
    job_dir = import_work_dir(chunk.params["job_dir"])
    for folder in JobChunk.objects.filter(job_id=chunk.job_id, status=JobStatus.DONE).values_list(
        "result__folder", flat=True
    ):
        if folder:
            import_attempt_discard(job_dir / folder)


def gastricx_import_finish(job: Job, chunks: list[JobChunk]) -> dict:
    """Every case loaded: refuse the import with every problem, or write its rows (and end the
    job) in one transaction."""
    chunks = sorted(chunks, key=lambda chunk: chunk.number)
    if not chunks:
        raise DomainError(
            gettext("The uploaded file is gone; upload it again."), code="upload_gone"
        )
    job_dir = import_work_dir(chunks[0].params["job_dir"])
    report = ImportReport()
    problems: list[RowProblem] = []
    for chunk in chunks:
        problems += [RowProblem(**problem) for problem in chunk.result.get("problems", [])]
        report.add(RowWarning(**warning) for warning in chunk.result.get("warnings", []))
    if problems:
        _refuse(job, job_dir, ImportFailed(problems, report))
    cases = {case.row: case for case in read_gastricx_root(job_dir / SKELETON)}
    loaded = [_loaded(cases[chunk.params["row"]], chunk) for chunk in chunks]
    name = job.params["name"]
    try:
        with transaction.atomic():
            image_ids: dict[str, int] = {}
            for chunk in chunks:
                staging = ImageStaging(job_dir / chunk.result["folder"])
                staging.restage(chunk.result.get("staged", {}))
                image_ids.update(staging.commit())
            benchmark = write_case_rows(loaded, name, job.created_by, "", image_ids)
            items = Item.objects.filter(benchmark=benchmark).count()
            result = {"benchmark": benchmark.name, "items": items, **report.as_result()}
            ended = Job.objects.filter(pk=job.pk, attempts=job.attempts, status=JobStatus.RUNNING)
            # The job ends with the rows, or neither does.
            if not ended.update(
                status=JobStatus.DONE, result=result, done=F("total"), finished_at=timezone.now()
            ):
                raise LeaseLost(f"import job {job.pk} was taken over by another worker")
    except IntegrityError:
        if not Benchmark.objects.filter(name=name).exists():
            raise
        message = gettext("A benchmark with this name already exists.")
        _discard(job, job_dir)
        raise JobRefused(message, result={"code": "name_taken"}, code="name_taken") from None
    _discard(job, job_dir)  # committed: the staged links, the skeleton and the upload have served
    return result


def _loaded(case, chunk: JobChunk) -> LoadedCase:
    phases = {
        phase: PhaseFiles(
            **{
                **files,
                "shape": tuple(files["shape"]),
                "spacing": tuple(files["spacing"]),
                "origin": tuple(files["origin"]),
                "direction": tuple(files["direction"]),
            }
        )
        for phase, files in chunk.result["phases"].items()
    }
    return LoadedCase(case, phases=phases, endoscopy=chunk.result.get("endoscopy"))


def _discard(job: Job, job_dir: Path) -> None:
    import_attempt_discard(job_dir)
    shutil.rmtree(Path(job.params["path"]).parent, ignore_errors=True)


def _refuse(job: Job, job_dir: Path, error: ImportFailed) -> NoReturn:
    """Bad input: every file of every case goes, the upload too (it has served), and the job
    fails with every problem."""
    _discard(job, job_dir)
    result = {
        "problems": [asdict(problem) for problem in error.problems[:MAX_LISTED_PROBLEMS]],
        "problems_total": len(error.problems),
        **error.report.as_result(),
    }
    raise JobRefused(str(error), result=result, code=error.code)


GASTRICX_IMPORT_WORK = ChunkedWork(
    kind="import",
    plan=gastricx_import_plan,
    work=gastricx_import_work,
    finish=gastricx_import_finish,
)
