"""Importing a benchmark file: all rows or none, with a report of every bad row.

Two stages. Reading checks every row and stages its images (checked once, without their
metadata) outside any transaction, so progress shows while it runs and a killed attempt leaves
only its own staging folder; the rows read so far wait in a spool file, so memory does not grow
with the file. Then one short transaction places the images and inserts the rows in batches.
"""

from __future__ import annotations

import pickle
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import CharField
from django.utils.translation import gettext, ngettext

from annotations.formats import ReadLimits, open_reader
from annotations.formats.cells import metadata_warnings
from annotations.formats.errors import FormatError, RowProblem, RowWarning
from annotations.formats.safezip import extract_zip
from annotations.imaging.images import ImageError, PreparedImage, prepare_image
from annotations.models import (
    COLUMN_FIELDS,
    Benchmark,
    Family,
    Item,
    ItemImage,
    ItemRevision,
    RevisionReason,
)
from annotations.services.bulk_rows import insert_items_returning_ids, insert_rows
from annotations.services.errors import DomainError
from annotations.services.images import ImageStaging, import_work_dir, staged_images_discard

if TYPE_CHECKING:
    from django.contrib.auth.models import User

BATCH = 1000
# A report lists this many warnings; the rest are counted by kind.
MAX_LISTED_WARNINGS = 500
_PROGRESS_SECONDS = 0.5

CORE_COLUMNS = {"index", "image", "question", "hint", "answer"}
_INDEX_RANGE = range(-(2**63), 2**63)  # what the database's bigint holds


@dataclass
class ImportReport:
    """What an import noticed but imported as it is: the first warnings, all counted by code."""

    warnings: list[RowWarning] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)

    def add(self, warnings: Iterable[RowWarning]) -> None:
        for warning in warnings:
            self.counts[warning.code] += 1
            if len(self.warnings) < MAX_LISTED_WARNINGS:
                self.warnings.append(warning)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_result(self) -> dict:
        """The report as a job stores it (JSON)."""
        return {
            "warnings": [asdict(warning) for warning in self.warnings],
            "warning_counts": dict(sorted(self.counts.items())),
            "warnings_total": self.total,
        }


@dataclass(frozen=True)
class ImportResult:
    benchmark: Benchmark
    items: int
    report: ImportReport


@dataclass(frozen=True)
class ImportProgress:
    """Where an import is: `stage` is "reading" (rows checked, images staged) or "saving"."""

    stage: str
    items: int
    fraction: float


class ImportFailed(DomainError):
    """The file was refused; nothing was stored. `problems` says where and why."""

    code = "import_failed"

    def __init__(self, problems: list[RowProblem], report: ImportReport | None = None) -> None:
        self.problems = problems
        self.report = report or ImportReport()
        count = len(problems)
        super().__init__(
            ngettext(
                "%(count)d problem found; nothing was imported.",
                "%(count)d problems found; nothing was imported.",
                count,
            )
            % {"count": count}
        )


def import_limits() -> ReadLimits:
    """The size and pixel limits an import enforces before decoding (settings)."""
    return ReadLimits(
        max_cell_bytes=settings.IMPORT_MAX_CELL_BYTES,
        max_image_pixels=settings.IMPORT_MAX_IMAGE_PIXELS,
    )


def benchmark_import(
    *,
    path: Path,
    family: str,
    name: str,
    user=None,
    description: str = "",
    progress: Callable[[int], None] | None = None,
) -> Benchmark:
    """Import a file as a new benchmark (see `benchmark_import_run`); `progress(n)` is told of
    rows read, as tqdm's `update`."""
    counted = 0

    def rows_read(state: ImportProgress) -> None:
        nonlocal counted
        if progress is not None and state.stage == "reading":
            progress(state.items - counted)
            counted = state.items

    result = benchmark_import_run(
        path=path, family=family, name=name, user=user, description=description, progress=rows_read
    )
    return result.benchmark


def benchmark_import_run(
    *,
    path: Path,
    family: str,
    name: str,
    user=None,
    description: str = "",
    progress: Callable[[ImportProgress], None] | None = None,
    work_dir: Path | None = None,
    before_commit: Callable[[ImportResult], None] | None = None,
) -> ImportResult:
    """Import a VLMEvalKit, EndoBench or MedQ-DEG file as a new benchmark, with its report.

    All-or-nothing: on any bad row (or a bad file) raises ImportFailed listing every problem,
    and neither rows nor image files are left behind. Images are staged in `work_dir` (a
    job's own folder, so a later attempt can discard what a killed one left); `before_commit`
    runs inside the final transaction, so a job can record its end together with the rows.
    """
    if family not in {Family.VLMEVAL, Family.ENDOBENCH, Family.MEDQDEG}:
        raise DomainError(
            gettext("Unknown family '%(family)s' for a table import.") % {"family": family}
        )
    _check_name_free(name)
    staging = ImageStaging(work_dir or import_work_dir(f"run-{uuid.uuid4().hex}"))
    new = _NewBenchmark(name, family, user, description)
    try:
        with _Spool() as spool, _unpacked(Path(path), family, staging.folder.parent) as source:
            read = _read_rows(source, family, staging, spool, _Throttled(progress))
            result = _save(new, read, spool, staging, _Throttled(progress), before_commit)
    except BaseException:
        staged_images_discard(staging.folder)
        raise
    staging.remove()
    return result


@contextmanager
def _unpacked(path: Path, family: str, scratch: Path) -> Iterator[Path]:
    """The file to read: `path` itself, or for an EndoBench zip the one JSON inside it,
    unpacked with its images into a scratch folder that is removed afterwards."""
    if family != Family.ENDOBENCH or path.suffix.lower() != ".zip":
        yield path
        return
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="endobench-", dir=scratch) as folder:
        try:
            extract_zip(path, Path(folder) / "unpacked")
        except FormatError as error:
            raise ImportFailed(error.problems) from None
        found = [
            json_path
            for json_path in (Path(folder) / "unpacked").rglob("*.json")
            if "__MACOSX" not in json_path.parts
        ]
        if len(found) != 1:
            reason = f"the zip must hold one .json file, it holds {len(found)}"
            raise ImportFailed([RowProblem(0, None, reason, "no_json")])
        yield found[0]


def _check_name_free(name: str) -> None:
    if Benchmark.objects.filter(name=name).exists():
        raise DomainError(gettext("A benchmark named '%(name)s' already exists.") % {"name": name})


@dataclass(frozen=True)
class _NewBenchmark:
    name: str
    family: str
    user: User | None
    description: str


@dataclass
class _Read:
    """What the reading stage learnt besides the spooled rows."""

    columns: list[str]
    option_letters: list[str]
    images_by_index: dict[int, tuple[str, ...]]
    report: ImportReport
    count: int


class _Spool:
    """Rows read, pickled to a temporary file in batches, read back when saving."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="clinreview-import-")  # noqa: SIM115
        self._batch: list[tuple] = []

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._file.close()

    def append(self, record: tuple) -> None:
        self._batch.append(record)
        if len(self._batch) >= BATCH:
            self._dump()

    def batches(self) -> Iterator[list[tuple]]:
        self._dump()
        self._file.seek(0)
        while True:
            try:
                yield pickle.load(self._file)  # our own file, written above
            except EOFError:
                return

    def _dump(self) -> None:
        if self._batch:
            pickle.dump(self._batch, self._file, protocol=pickle.HIGHEST_PROTOCOL)
            self._batch = []


class _Throttled:
    """Calls `progress` at most every half second (and always for the last call)."""

    def __init__(self, progress: Callable[[ImportProgress], None] | None) -> None:
        self._progress = progress
        self._last = 0.0

    def __call__(self, stage: str, items: int, fraction: float, *, force: bool = False) -> None:
        now = time.monotonic()
        if self._progress is not None and (force or now - self._last >= _PROGRESS_SECONDS):
            self._last = now
            self._progress(ImportProgress(stage, items, fraction))


def _read_rows(path: Path, family: str, staging, spool: _Spool, progress: _Throttled) -> _Read:
    report = ImportReport()
    reader = open_reader(path, family, limits=import_limits())
    images_by_index: dict[int, tuple[str, ...]] = {}
    count = 0
    try:
        for row in reader:
            problems = _row_problems(row)
            reader.problems.extend(problems)
            if not problems and not reader.problems:
                # Once a row is bad nothing will be stored: the rest is only checked.
                digests = _stage_row_images(row, path.parent, reader, staging)
                if digests is not None:
                    if digests:
                        images_by_index[row.index] = digests
                    spool.append(_record(row, digests))
            count += 1
            report.add(reader.warnings)
            reader.warnings.clear()
            progress("reading", count, reader.fraction_read())
    except FormatError as error:
        report.add(reader.warnings)
        raise ImportFailed(sorted([*reader.problems, *error.problems], key=_row), report) from error
    report.add(reader.warnings)
    if reader.problems:
        raise ImportFailed(list(reader.problems), report)
    if count == 0:
        raise ImportFailed([RowProblem(0, None, "the file holds no item", "no_items")], report)
    progress("reading", count, 1.0, force=True)
    return _Read(reader.columns, reader.option_letters, images_by_index, report, count)


def _row(problem: RowProblem) -> int:
    return problem.row


def _row_problems(row) -> list[RowProblem]:
    """What the database could not keep: an index out of range, a value longer than its column."""
    problems = []
    if row.index not in _INDEX_RANGE:
        problems.append(
            RowProblem(row.row, "index", f"index {row.index} is out of range", "bad_index")
        )
    for column, value in row.extra.items():
        limit = _column_limits().get(column)
        if limit and len(value) > limit:
            reason = f"{len(value)} characters, longer than the {limit} this column may hold"
            problems.append(RowProblem(row.row, column, reason, "too_long"))
    return problems


@cache
def _column_limits() -> dict[str, int]:
    fields = {column: Item._meta.get_field(name) for column, name in COLUMN_FIELDS.items()}
    return {
        column: field.max_length
        for column, field in fields.items()
        if isinstance(field, CharField) and field.max_length is not None
    }


def _stage_row_images(row, folder: Path, reader, staging) -> tuple[str, ...] | None:
    """Stage the row's images; None (and a problem) when a file is missing or bad."""
    if row.images and len(row.image_infos) == len(row.images):
        prepared = [
            PreparedImage(data, info, ())
            for data, info in zip(row.images, row.image_infos, strict=True)
        ]
    else:
        try:
            prepared = _unchecked_images(row, folder, reader)
        except (OSError, ValueError, ImageError) as error:
            column = "image" if row.images else "image_path"
            reader.problems.append(RowProblem(row.row, column, str(error)))
            return None
    return tuple(staging.add(image) for image in prepared)


def _unchecked_images(row, folder: Path, reader) -> list[PreparedImage]:
    """Images the reader did not check (image_path files, or a reader told not to)."""
    limits = import_limits()
    payloads = list(row.images)
    column = "image"
    if not payloads and row.image_ref is None and row.image_paths:
        payloads = [_read_local_image(folder, p, limits) for p in row.image_paths]
        column = "image_path"
    prepared = [prepare_image(data, max_pixels=limits.max_image_pixels) for data in payloads]
    reader.warnings.extend(metadata_warnings(row.row, column, [p.removed for p in prepared]))
    return prepared


def _read_local_image(folder: Path, relative: str, limits: ReadLimits) -> bytes:
    root = folder.resolve()
    for base in (root, root / "images"):
        candidate = (base / relative).resolve()
        if not candidate.is_relative_to(root):
            raise ValueError(f"image path {relative!r} leaves the benchmark folder")
        if candidate.is_file():
            size = candidate.stat().st_size
            if size > limits.max_cell_bytes:
                raise ValueError(
                    f"image file {relative!r} of {size:,} bytes is over the limit of "
                    f"{limits.max_cell_bytes:,}"
                )
            return candidate.read_bytes()
    raise ValueError(f"image file {relative!r} not found next to the benchmark file")


def _record(row, digests: tuple[str, ...]) -> tuple:
    fields = {
        "source_index": row.index,
        "question": row.question,
        "hint": row.hint,
        "options": list(row.options.values()),
        "answer": row.answer,
    }
    extra = {}
    for column, value in row.extra.items():
        target = COLUMN_FIELDS.get(column)
        if target:
            fields[target] = value
        elif column not in CORE_COLUMNS:
            extra[column] = value
    if row.image_paths:
        # Kept as the cell read, so that an export writes the same image_path back.
        extra["image_path"] = (
            row.image_paths[0] if len(row.image_paths) == 1 else repr(list(row.image_paths))
        )
    fields["extra"] = extra
    return fields, digests, row.image_ref


def _save(
    new: _NewBenchmark,
    read: _Read,
    spool: _Spool,
    staging: ImageStaging,
    progress: _Throttled,
    before_commit: Callable[[ImportResult], None] | None,
) -> ImportResult:
    """The short transaction: images placed, rows inserted in batches, the caller's last word."""
    try:
        with transaction.atomic():
            benchmark = Benchmark.objects.create(
                name=new.name,
                family=new.family,
                created_by=new.user,
                description=new.description,
                columns=read.columns,
                option_letters=read.option_letters,
            )
            image_ids = staging.commit()
            saved = 0
            for batch in spool.batches():
                saved += _insert(benchmark, batch, image_ids, read.images_by_index, new.user)
                progress("saving", saved, saved / read.count)
            benchmark.taxonomy = _taxonomy_of(benchmark)
            benchmark.save(update_fields=["taxonomy"])
            result = ImportResult(benchmark, saved, read.report)
            if before_commit is not None:
                before_commit(result)
    except IntegrityError as error:
        # Another import took the name since it was checked.
        if Benchmark.objects.filter(name=new.name).exists():
            _check_name_free(new.name)
        raise error
    return result


def _insert(
    benchmark: Benchmark,
    batch: list[tuple],
    image_ids: dict[str, int],
    images_by_index: dict[int, tuple[str, ...]],
    user,
) -> int:
    # Bare executemany (services.bulk_rows): at a pool's size, bulk_create's per-value
    # compilation was most of the import's time.
    rows = [{"benchmark_id": benchmark.pk, **fields} for fields, _, _ in batch]
    ids = insert_items_returning_ids(Item, rows, scope={"benchmark_id": benchmark.pk})
    links = []
    for item_id, (_, digests, reference) in zip(ids, batch, strict=True):
        shown = digests if reference is None else images_by_index[reference]
        links += [
            {"item_id": item_id, "image_id": image_ids[digest], "position": position}
            for position, digest in enumerate(shown)
        ]
    insert_rows(ItemImage, links)
    author = getattr(user, "pk", None)
    insert_rows(
        ItemRevision,
        (
            {
                "item_id": item_id,
                "version": 1,
                "content": _imported_content(fields),
                "reason": RevisionReason.IMPORTED,
                "author_id": author,
            }
            for item_id, (fields, _, _) in zip(ids, batch, strict=True)
        ),
    )
    return len(ids)


def _imported_content(fields: dict) -> dict:
    """Item.content() of an imported (multiple-choice) item, without building the Item."""
    return {
        "question": fields["question"],
        "hint": fields["hint"],
        "options": fields["options"],
        "answer": fields["answer"],
    }


def _taxonomy_of(benchmark: Benchmark) -> dict[str, list[str]]:
    """The distinct values of each taxonomy field present in the benchmark."""
    taxonomy = {}
    for column, field_name in COLUMN_FIELDS.items():
        distinct = (
            Item.objects.filter(benchmark=benchmark)
            .exclude(**{field_name: ""})
            .order_by(field_name)
            .values_list(field_name, flat=True)
            .distinct()
        )
        values = list(distinct[:500])
        if values:
            taxonomy[column] = values
    return taxonomy
