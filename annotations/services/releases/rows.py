"""Items read for a release as plain rows, a chunk at a time.

Building a model instance costs several times more than reading its row; at hundreds of
thousands of items that is most of an export's time. `ItemRow` carries the fields a release
writes and answers like an Item where the release's helpers (and `pair_export`) ask it to.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from django.db.models import Count, QuerySet
from django.db.models.sql.constants import MULTI

from annotations.formats.jsonexport import loads_strict
from annotations.models import TAXONOMY_FIELDS, Benchmark, Item, ItemImage
from annotations.services.releases.sources import ImageRef

CHUNK = 1000

_FIELDS = (
    "id",
    "source_index",
    "question",
    "hint",
    "options",
    "answer",
    *TAXONOMY_FIELDS,
    "extra",
    "clean_twin_id",
    "degradation_type",
    "degradation_severity",
    "degradation_params",
    "degradation_seed",
    "status",
    "version",
    "case_id",
)


# The JSON columns, by position in a row of _FIELDS: decoded here, not by Django's converters.
_JSON_POSITIONS = tuple(_FIELDS.index(name) for name in ("options", "extra", "degradation_params"))


def raw_rows(queryset: QuerySet) -> list[tuple]:
    """The rows of a `values_list` query as the database driver gives them.

    Django's converters cost a function call per converted cell and a list and a tuple per row;
    over a release's hundreds of thousands of rows that is a large part of its time. Callers
    convert the few cells that need it themselves: JSON text (both backends deliver jsonb and
    SQLite's JSON as text), SQLite's 0/1 booleans and text datetimes (see `utc_date`).
    """
    compiler = queryset.query.get_compiler(using=queryset.db)
    rows: list[tuple] = []
    for block in compiler.execute_sql(MULTI, chunked_fetch=False):
        rows.extend(block)
    return rows


def utc_date(value) -> str:
    """The UTC date (ISO) of a DateTimeField value as the driver gives it: SQLite's text
    ('2026-11-30 08:15:00.123456', stored in UTC) or PostgreSQL's aware datetime (in UTC, the
    connection's time zone under USE_TZ)."""
    if isinstance(value, str):
        return value[:10]
    return value.date().isoformat()


def _decode_json_cells(cells: list) -> None:
    """Decode the row's JSON cells in place (both backends refuse NaN in them, see the tests)."""
    for position in _JSON_POSITIONS:
        if cells[position] is not None:
            cells[position] = loads_strict(cells[position])


class _Twin(NamedTuple):
    source_index: int


@dataclass(slots=True)
class ItemRow:
    id: int
    source_index: int
    question: str
    hint: str
    options: list
    answer: str
    category: str
    l2_category: str
    split: str
    task: str
    subtask: str
    scene: str
    dataset: str
    modality: str
    source: str
    extra: dict
    clean_twin_id: int | None
    degradation_type: str
    degradation_severity: str
    degradation_params: dict | None
    degradation_seed: int | None
    status: str
    version: int
    case_id: int | None
    case_code: str | None
    twin_index: int | None
    benchmark: Benchmark

    @property
    def clean_twin(self) -> _Twin | None:
        return None if self.twin_index is None else _Twin(self.twin_index)

    # The model's own rules, applied to the row.
    answer_text = Item.answer_text
    taxonomy = Item.taxonomy


def item_chunks(
    items: QuerySet[Item], benchmark: Benchmark
) -> Iterator[tuple[list[ItemRow], QuerySet[Item]]]:
    """(rows, the same items as a query) a chunk at a time, by keyset on the index: no cursor is
    held open across the export, and the per-chunk queries select by subquery rather than by a
    list of a thousand ids."""
    columns = (*_FIELDS, "case__case_id", "clean_twin__source_index")
    last = None
    while True:
        page = items if last is None else items.filter(source_index__gt=last)
        chunk = []
        for row in raw_rows(page.values_list(*columns)[:CHUNK]):
            cells = list(row)
            _decode_json_cells(cells)
            chunk.append(ItemRow(*cells, benchmark))
        if not chunk:
            return
        bounds = {"source_index__gte": chunk[0].source_index}
        bounds["source_index__lte"] = chunk[-1].source_index
        yield chunk, items.filter(**bounds).values("id")
        last = chunk[-1].source_index


def shared_image_ids(items: QuerySet[Item]) -> set[int]:
    """The images that more than one of the items shows (one query): only those can be written
    once and reused by index, so only those need remembering while a TSV is written."""
    rows = (
        ItemImage.objects.filter(item__in=items)
        .values("image_id")
        .annotate(uses=Count("item_id"))
        .filter(uses__gt=1)
        .values_list("image_id", flat=True)
    )
    return set(rows)


def chunk_images(chunk_ids: QuerySet[Item]) -> dict[int, list[ImageRef]]:
    """The ordered images of each item of a chunk, in one query."""
    images: dict[int, list[ImageRef]] = {}
    rows = (
        ItemImage.objects.filter(item_id__in=chunk_ids)
        .order_by("item_id", "position")
        .values_list(
            "item_id",
            "image_id",
            "image__file",
            "image__format",
            "image__sha256",
            "image__size_bytes",
        )
    )
    for item_id, *image in raw_rows(rows):
        images.setdefault(item_id, []).append(ImageRef(*image))
    return images
