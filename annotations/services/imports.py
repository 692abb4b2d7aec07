"""Importing a benchmark file: all rows or none, with a report of every bad row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.translation import gettext, ngettext

from annotations.formats import open_reader
from annotations.formats.errors import FormatError, RowProblem
from annotations.imaging.images import ImageError
from annotations.models import Benchmark, Family, Item, ItemImage, ItemRevision, RevisionReason
from annotations.services.errors import DomainError
from annotations.services.images import image_files_delete, image_store

BATCH = 1000

# Imported column -> Item field. Every other column is kept in Item.extra under its own name.
COLUMN_FIELDS = {
    "category": "category",
    "l2-category": "l2_category",
    "split": "split",
    "task": "task",
    "subtask": "subtask",
    "scene": "scene",
    "dataset": "dataset",
    "modality": "modality",
    "source": "source",
    "degradation_type": "degradation_type",
    "degradation_severity": "degradation_severity",
}
CORE_COLUMNS = {"index", "image", "question", "hint", "answer"}


class ImportFailed(DomainError):
    """The file was refused; nothing was stored. `problems` says where and why."""

    code = "import_failed"

    def __init__(self, problems: list[RowProblem]) -> None:
        self.problems = problems
        count = len(problems)
        super().__init__(
            ngettext(
                "%(count)d problem found; nothing was imported.",
                "%(count)d problems found; nothing was imported.",
                count,
            )
            % {"count": count}
        )


@dataclass
class _Pending:
    """Rows read but not yet written, with their images and reuse references."""

    items: list[Item] = field(default_factory=list)
    images: list[list[int]] = field(default_factory=list)
    refs: list[int | None] = field(default_factory=list)
    # (item id, referenced index) for rows that reuse another row's image, linked at the end
    # because the referenced row may come later in the file.
    reused: list[tuple[int, int]] = field(default_factory=list)


def benchmark_import(
    *,
    path: Path,
    family: str,
    name: str,
    user=None,
    description: str = "",
    progress: Callable[[int], None] | None = None,
) -> Benchmark:
    """Import a VLMEvalKit, EndoBench or MedQ-DEG file as a new benchmark.

    All-or-nothing: on any bad row (or a bad file) raises ImportFailed listing every problem,
    and neither rows nor image files are left behind.
    """
    if family not in {Family.VLMEVAL, Family.ENDOBENCH, Family.MEDQDEG}:
        raise DomainError(
            gettext("Unknown family '%(family)s' for a table import.") % {"family": family}
        )
    if Benchmark.objects.filter(name=name).exists():
        raise DomainError(gettext("A benchmark named '%(name)s' already exists.") % {"name": name})
    written_files: list[str] = []
    try:
        with transaction.atomic():
            benchmark = _import_rows(path, family, name, user, description, written_files, progress)
    except FormatError as error:
        image_files_delete(written_files)
        raise ImportFailed(error.problems) from error
    except ImportFailed:
        image_files_delete(written_files)
        raise
    return benchmark


def _import_rows(path, family, name, user, description, written_files, progress) -> Benchmark:
    reader = open_reader(Path(path), family)
    benchmark = Benchmark.objects.create(
        name=name, family=family, created_by=user, description=description
    )
    images_by_index: dict[int, list[int]] = {}
    pending = _Pending()
    count = 0
    for row in reader:
        image_ids = _store_row_images(row, Path(path).parent, reader, written_files)
        if image_ids is None:
            continue
        if image_ids:
            images_by_index[row.index] = image_ids
        pending.items.append(_item_from_row(benchmark, row))
        pending.images.append(image_ids)
        pending.refs.append(row.image_ref)
        count += 1
        if len(pending.items) >= BATCH and not reader.problems:
            _flush(pending, images_by_index, user)
        if progress:
            progress(1)
    if reader.problems:
        raise ImportFailed(list(reader.problems))
    if count == 0:
        raise ImportFailed([RowProblem(0, None, "the file holds no item")])
    _flush(pending, images_by_index, user)
    _link_reused(pending.reused, images_by_index)
    benchmark.columns = list(reader.columns)
    benchmark.option_letters = list(reader.option_letters)
    benchmark.taxonomy = _taxonomy_of(benchmark)
    benchmark.save(update_fields=["columns", "option_letters", "taxonomy"])
    return benchmark


def _store_row_images(row, folder: Path, reader, written_files: list[str]) -> list[int] | None:
    """Store the row's images; None (and a problem) when a referenced file is missing or bad."""
    payloads: list[bytes] = list(row.images)
    if not payloads and row.image_ref is None and row.image_paths:
        try:
            payloads = [_read_local_image(folder, p) for p in row.image_paths]
        except (OSError, ValueError) as error:
            reader.problems.append(RowProblem(row.row, "image_path", str(error)))
            return None
    ids = []
    for data in payloads:
        try:
            image, created = image_store(data=data)
        except ImageError as error:
            reader.problems.append(RowProblem(row.row, "image", str(error)))
            return None
        if created:
            written_files.append(image.file.name)
        ids.append(image.id)
    return ids


def _read_local_image(folder: Path, relative: str) -> bytes:
    root = folder.resolve()
    for base in (root, root / "images"):
        candidate = (base / relative).resolve()
        if not candidate.is_relative_to(root):
            raise ValueError(f"image path {relative!r} leaves the benchmark folder")
        if candidate.is_file():
            return candidate.read_bytes()
    raise ValueError(f"image file {relative!r} not found next to the benchmark file")


def _item_from_row(benchmark: Benchmark, row) -> Item:
    item = Item(
        benchmark=benchmark,
        source_index=row.index,
        question=row.question,
        hint=row.hint,
        options=list(row.options.values()),
        answer=row.answer,
    )
    extra = {}
    for column, value in row.extra.items():
        target = COLUMN_FIELDS.get(column)
        if target:
            setattr(item, target, value)
        elif column not in CORE_COLUMNS:
            extra[column] = value
    if row.image_paths:
        # Kept as the cell read, so that an export writes the same image_path back.
        extra["image_path"] = (
            row.image_paths[0] if len(row.image_paths) == 1 else repr(list(row.image_paths))
        )
    item.extra = extra
    return item


def _flush(pending: _Pending, images_by_index: dict[int, list[int]], user) -> None:
    if not pending.items:
        return
    created = Item.objects.bulk_create(pending.items)
    links = []
    for item, image_ids, ref in zip(created, pending.images, pending.refs, strict=True):
        if ref is not None:
            pending.reused.append((item.id, ref))
        links.extend(ItemImage(item=item, image_id=i, position=p) for p, i in enumerate(image_ids))
    ItemImage.objects.bulk_create(links)
    ItemRevision.objects.bulk_create(_imported_revisions(created, user))
    pending.items, pending.images, pending.refs = [], [], []


def _link_reused(reused: list[tuple[int, int]], images_by_index: dict[int, list[int]]) -> None:
    links = [
        ItemImage(item_id=item_id, image_id=image_id, position=position)
        for item_id, ref in reused
        for position, image_id in enumerate(images_by_index[ref])
    ]
    ItemImage.objects.bulk_create(links, batch_size=BATCH)


def _imported_revisions(items: Iterable[Item], user) -> list[ItemRevision]:
    return [
        ItemRevision(
            item=item,
            version=1,
            content=item.content(),
            reason=RevisionReason.IMPORTED,
            author=user,
        )
        for item in items
    ]


def _taxonomy_of(benchmark: Benchmark) -> dict[str, list[str]]:
    """The distinct values of each taxonomy field present in the benchmark."""
    taxonomy = {}
    for column, field_name in COLUMN_FIELDS.items():
        values = (
            Item.objects.filter(benchmark=benchmark)
            .exclude(**{field_name: ""})
            .order_by(field_name)
            .values_list(field_name, flat=True)
            .distinct()
        )
        values = list(values[:500])
        if values:
            taxonomy[column] = values
    return taxonomy
