"""Starting an import: the upload stored in its own folder, a job queued for a worker."""

from __future__ import annotations

import shutil
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePath

from django.conf import settings
from django.utils.translation import gettext as _

from annotations.formats import open_reader
from annotations.formats.errors import RowProblem
from annotations.formats.vlmeval import McqTsvReader
from annotations.models import Benchmark, Family, Job
from annotations.services import dispatch
from annotations.services.errors import DomainError
from annotations.services.imports import ImportFailed, import_limits
from annotations.services.jobs import OPEN, job_create

UPLOADS_FOLDER = "uploads"

# What each family's file may be; the suffix picks the reader (an EndoBench .zip holds its
# JSON and the images the JSON names).
FILE_TYPES = {
    Family.VLMEVAL: (".tsv",),
    Family.ENDOBENCH: (".tsv", ".json", ".zip"),
    Family.MEDQDEG: (".tsv",),
    Family.GASTRICX: (".zip",),
}


@dataclass(frozen=True)
class StoredUpload:
    """An upload kept on disk: `token` names its folder, `name` is the client's file name."""

    token: str
    name: str
    suffix: str

    @property
    def path(self) -> Path:
        return _folder(self.token) / f"upload{self.suffix}"

    def exists(self) -> bool:
        return self.path.is_file()


def _folder(token: str) -> Path:
    return Path(settings.MEDIA_ROOT) / UPLOADS_FOLDER / token


def file_type_problem(family: str, file_name: str) -> str | None:
    """Why a file of this name cannot be a `family` import (translated), or None."""
    suffix = PurePath(file_name).suffix.lower()
    allowed = FILE_TYPES.get(family)  # type: ignore[call-overload]  # any text, told apart here
    if allowed is None:
        return _("Unknown format “%(family)s”.") % {"family": family}
    if suffix not in allowed:
        return _("This format takes a %(allowed)s file, not “%(name)s”.") % {
            "allowed": " / ".join(allowed),
            "name": PurePath(file_name).name,
        }
    return None


def upload_store(*, upload) -> StoredUpload:
    """Keep an uploaded file in a folder of its own, named by a random token: the client's file
    name never picks the path. Kept across a form error, so the user need not choose it again."""
    token = uuid.uuid4().hex
    name = PurePath(upload.name or "upload").name[:200]
    stored = StoredUpload(token=token, name=name, suffix=PurePath(name).suffix.lower()[:10])
    _folder(token).mkdir(parents=True)
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        shutil.move(temporary(), stored.path)  # the handler's file on disk: no second copy
        return stored
    with open(stored.path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return stored


def upload_discard(*, stored: StoredUpload) -> None:
    shutil.rmtree(_folder(stored.token), ignore_errors=True)


def upload_problems(*, stored: StoredUpload, family: str) -> list[RowProblem]:
    """What can be told of the file at once, before a worker reads it all: a zip that is not
    one, a table whose header is empty, unreadable or lacks a required column."""
    if stored.suffix == ".zip":
        if zipfile.is_zipfile(stored.path):
            return []
        return [RowProblem(0, None, "not a readable zip file", "not_zip")]
    if stored.suffix == ".json":
        return []  # an array is only known once the whole file is read
    reader = open_reader(stored.path, family, limits=import_limits())
    return reader.header_problems() if isinstance(reader, McqTsvReader) else []


def import_start(*, stored: StoredUpload, family: str, name: str, user) -> Job:
    """Queue the import of a stored upload as benchmark `name`; the worker starts after commit.
    Refuses (DomainError) a taken name or a file this family cannot read, and (ImportFailed,
    with the problems) a file whose header or archive is already wrong."""
    problem = file_type_problem(family, stored.name)
    if problem:
        raise DomainError(problem, code="wrong_file_type")
    if Benchmark.objects.filter(name=name).exists():
        raise DomainError(_("A benchmark with this name already exists."), code="name_taken")
    if Job.objects.filter(kind="import", status__in=OPEN, params__name=name).exists():
        # Refused before the upload is accepted: two imports of one name, one would fail late.
        raise DomainError(
            _("An import of a benchmark with this name is already under way."), code="name_taken"
        )
    if not stored.exists():
        raise DomainError(_("The uploaded file is gone; upload it again."), code="upload_gone")
    problems = upload_problems(stored=stored, family=family)
    if problems:
        raise ImportFailed(problems)
    params = {"path": str(stored.path), "family": family, "name": name, "file_name": stored.name}
    job = job_create(kind="import", params=params, user=user)
    dispatch.enqueue(dispatch.BENCHMARK_IMPORT, job.id)
    return job
