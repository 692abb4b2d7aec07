"""Items read for a release as plain rows, a chunk at a time, with their images and cases,
the header of NAME.tsv, and the stored image bytes a release writes.

A model instance costs several times more than its row; `ItemRow` carries the fields a release
writes and answers like an Item where the release (and `pair_export`) asks it to.
"""

from __future__ import annotations

import os
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, TypedDict

from django.core.files.storage import FileSystemStorage, default_storage
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.sql.constants import MULTI
from pybase64 import b64encode

from annotations.formats import stream
from annotations.formats.jsonexport import loads_strict
from annotations.formats.release_layout import DEFAULT_COLUMNS, REPORT_COLUMNS, header
from annotations.formats.stream import image_file_name
from annotations.models import (
    COLUMN_FIELDS,
    TAXONOMY_FIELDS,
    Adjudication,
    Benchmark,
    Box,
    Case,
    Image,
    Item,
    ItemImage,
    ItemRevision,
    Review,
    Volume,
)

CHUNK = 1000
# The ids of a chunk's items, as a subquery (`values("id")`).
ItemIds: TypeAlias = "QuerySet[Item, Mapping[str, object]]"
_FIELD_COLUMNS = {field: column for column, field in COLUMN_FIELDS.items()}

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
    "kind",
    "reference",
    "target",
)


# The JSON columns, by position in a row of _FIELDS: decoded here, not by Django's converters.
_JSON_POSITIONS = tuple(
    _FIELDS.index(name) for name in ("options", "extra", "degradation_params", "target")
)


def raw_rows(queryset: QuerySet) -> list[tuple]:
    """The rows of a `values_list` query as the driver gives them, without Django's per-cell
    converters; callers convert JSON text, SQLite's 0/1 booleans and dates (`utc_date`)."""
    compiler = queryset.query.get_compiler(using=queryset.db)
    rows: list[tuple] = []
    for block in compiler.execute_sql(MULTI, chunked_fetch=False):
        rows.extend(block)
    return rows


def utc_date(value) -> str:
    """The UTC date of a DateTimeField as the driver gives it: SQLite's text (in UTC) or
    PostgreSQL's aware datetime (UTC under USE_TZ)."""
    if isinstance(value, str):
        return value[:10]
    return value.date().isoformat()


def _decode_json_cells(cells: list) -> None:
    for position in _JSON_POSITIONS:
        if cells[position] is not None:
            cells[position] = loads_strict(cells[position])


class ImageRef(NamedTuple):
    id: int
    file: str
    format: str
    sha256: str
    size: int
    width: int
    height: int


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
    kind: str
    reference: str
    target: Any
    case_code: str | None
    twin_index: int | None
    benchmark: Benchmark

    @property
    def clean_twin(self) -> _Twin | None:
        return None if self.twin_index is None else _Twin(self.twin_index)

    # The model's own rules, applied to the row (their annotations name Item: restated here).
    if TYPE_CHECKING:

        @property
        def answer_text(self) -> str: ...

        def taxonomy(self) -> dict[str, str]: ...

    else:
        answer_text = Item.answer_text
        taxonomy = Item.taxonomy


def item_chunks(
    items: QuerySet[Item], benchmark: Benchmark
) -> Iterator[tuple[list[ItemRow], ItemIds]]:
    """(rows, the same items as a query) a chunk at a time, by keyset on the index: no cursor
    stays open across the export."""
    columns = (*_FIELDS, "case__case_id", "clean_twin__source_index")
    last = None
    while True:
        page = items if last is None else items.filter(source_index__gt=last)
        chunk = []
        for row in raw_rows(page.values_list(*columns)[:CHUNK]):
            cells = list(row)
            _decode_json_cells(cells)
            cells.append(benchmark)
            chunk.append(ItemRow(*cells))
        if not chunk:
            return
        bounds = {"source_index__gte": chunk[0].source_index}
        bounds["source_index__lte"] = chunk[-1].source_index
        yield chunk, items.filter(**bounds).values("id")
        last = chunk[-1].source_index


def shared_image_ids(items: QuerySet[Item]) -> set[Hashable]:
    """The images several of the items show: only those are remembered for reuse by index.
    Their ids, as the TSV writers' image keys (`stream.TsvWriter`'s `shared`)."""
    rows = (
        ItemImage.objects.filter(item__in=items)
        .values("image_id")
        .annotate(uses=Count("item_id"))
        .filter(uses__gt=1)
        .values_list("image_id", flat=True)
    )
    return set(rows)


def chunk_images(chunk_ids: ItemIds) -> dict[int, list[ImageRef]]:
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
            "image__width",
            "image__height",
        )
    )
    for item_id, *image in raw_rows(rows):
        images.setdefault(item_id, []).append(ImageRef(*image))
    return images


def chunk_revisions(ids: QuerySet) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = defaultdict(list)
    rows = (
        ItemRevision.objects.filter(item_id__in=ids)
        .order_by("item_id", "version")
        .values_list("item_id", "version", "replaced_version", "reason", "created_at")
    )
    for item_id, version, replaced, reason, created in raw_rows(rows):
        found[item_id].append(
            {
                "version": version,
                "replaced_version": replaced,
                "reason": reason,
                "date": utc_date(created),
            }
        )
    return found


def empty_reviews() -> dict:
    return {"count": 0, "verdicts": {}, "reject_reasons": {}}


def chunk_reviews(ids: QuerySet) -> dict[int, dict]:
    found: dict[int, dict] = {}
    rows = (
        Review.objects.filter(item_id__in=ids)
        .order_by("item_id", "id")
        .values_list("item_id", "verdict", "reason", "answerable", "realism", "severity_judgement")
    )
    for item_id, verdict, reason, answerable, realism, severity in raw_rows(rows):
        summary = found.setdefault(item_id, {**empty_reviews(), "_pair": Counter()})
        summary["count"] += 1
        summary["verdicts"][verdict] = summary["verdicts"].get(verdict, 0) + 1
        if reason:
            summary["reject_reasons"][reason] = summary["reject_reasons"].get(reason, 0) + 1
        if answerable is not None:
            summary["_pair"]["answerable" if answerable else "unanswerable"] += 1
        if realism is not None:
            summary["_pair"][f"realism_{realism}"] += 1
        if severity:
            summary["_pair"][f"severity_{severity}"] += 1
    for summary in found.values():
        pair = summary.pop("_pair")
        if pair:
            summary["pair"] = dict(sorted(pair.items()))
    return found


def chunk_adjudications(ids: QuerySet) -> dict[int, dict]:
    found: dict[int, dict] = {}
    rows = (
        Adjudication.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "choice", "rejected", "item_version", "created_at")
    )
    for item_id, choice, rejected, version, created in raw_rows(rows):
        # The latest decision is the one in force.
        found[item_id] = {
            "choice": choice,
            "rejected": bool(rejected),  # SQLite gives 0/1
            "item_version": version,
            "date": utc_date(created),
        }
    return found


def chunk_boxes_2d(image_ids: QuerySet) -> list[tuple[int | None, int, dict]]:
    """(owner item or None, image id, box) of the boxes drawn on the chunk's images."""
    rows = (
        Box.objects.filter(volume__isnull=True, image_id__in=image_ids)
        .exclude(state__in=Box.LEFT_OUT)
        .order_by("id")
        .values_list(
            "item_id", "image_id", "image__sha256", "label", "state", "x0", "y0", "x1", "y1"
        )
    )
    return [
        (
            owner,
            image_id,
            {
                "kind": "2d",
                "image": sha,
                "label": label,
                "state": state,
                "pixels": [x0, y0, x1, y1],
            },
        )
        for owner, image_id, sha, label, state, x0, y0, x1, y1 in raw_rows(rows)
    ]


def coco_rows(items: QuerySet[Item]) -> tuple[Iterator[dict], Iterator[dict]]:
    """(images, boxes) of the COCO file of the items' 2D boxes, rejected ones left out; image ids
    are the stored images' ids, file names those of the release's images/ folder."""
    image_ids = ItemImage.objects.filter(item__in=items).values("image_id")
    boxes = (
        Box.objects.filter(volume__isnull=True, image_id__in=image_ids)
        .exclude(state__in=Box.LEFT_OUT)
        .order_by("image_id", "id")
    )
    images = Image.objects.filter(id__in=boxes.values("image_id")).order_by("id")
    image_rows = images.values_list("id", "sha256", "format", "width", "height")
    box_rows = boxes.values_list("image_id", "label", "x0", "y0", "x1", "y1")
    return (
        (
            {"id": i, "file_name": image_file_name(sha, f), "sha256": sha, "width": w, "height": h}
            for i, sha, f, w, h in image_rows.iterator(chunk_size=2000)
        ),
        (
            {"image_id": i, "label": label, "x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0}
            for i, label, x0, y0, x1, y1 in box_rows.iterator(chunk_size=2000)
        ),
    )


def images_bytes(items: QuerySet[Item]) -> int:
    """The stored size of the distinct images the items show."""
    image_ids = ItemImage.objects.filter(item__in=items).values("image_id")
    return Image.objects.filter(id__in=image_ids).aggregate(n=Sum("size_bytes"))["n"] or 0


class VolumeRow(NamedTuple):
    id: int
    phase: str
    size_x: int
    size_y: int
    size_z: int
    spacing: list
    origin: list
    direction: list
    series_uid: str
    cache_path: str


class CaseSide(NamedTuple):
    """A Gastric-X case as the task files show it: its endoscopy image and CT phases."""

    code: str
    endoscopy: ImageRef | None
    volumes: list[VolumeRow]  # in phase order

    def volume(self, phase: object) -> VolumeRow | None:
        return next((volume for volume in self.volumes if volume.phase == phase), None)


def chunk_cases(case_ids: set[int]) -> dict[int, CaseSide]:
    """The cases of a chunk's task items with their endoscopy image and volumes (two queries)."""
    if not case_ids:
        return {}
    from annotations.selectors.cases import PHASE_ORDER  # (loads the CT stack: Gastric-X only)

    volumes: dict[int, list[VolumeRow]] = defaultdict(list)
    rows = Volume.objects.filter(case_id__in=case_ids).values_list("case_id", *VolumeRow._fields)
    for case_id, *volume in rows:
        volumes[case_id].append(VolumeRow(*volume))
    found = {}
    cases = Case.objects.filter(pk__in=case_ids).values_list(
        "pk", "case_id", "endoscopy_image_id", "endoscopy_image__file", "endoscopy_image__format",
        "endoscopy_image__sha256", "endoscopy_image__size_bytes", "endoscopy_image__width",
        "endoscopy_image__height",
    )  # fmt: skip
    for pk, code, image_id, *image in cases:
        ordered = sorted(volumes[pk], key=lambda v: PHASE_ORDER.index(v.phase))
        endoscopy = ImageRef(image_id, *image) if image_id else None
        found[pk] = CaseSide(code, endoscopy, ordered)
    return found


class KindCount(TypedDict):
    items: int
    l2: int
    split: int


def kind_counts(items: QuerySet[Item], l2_field: str) -> dict[str, KindCount]:
    """Per item kind: how many items, and how many have an l2-category and a split."""
    rows = (
        items.order_by()
        .values("kind")
        .annotate(
            items=Count("pk"),
            l2=Count("pk", filter=~Q(**{l2_field: ""})),
            split=Count("pk", filter=~Q(split="")),
        )
    )
    return {
        row["kind"]: KindCount(items=row["items"], l2=row["l2"], split=row["split"]) for row in rows
    }


def withheld_cases(items: QuerySet[Item], split: str) -> QuerySet:
    """Ids of the withheld cases of a release (a subquery): the split is decided per case, so
    a case with any item in the withheld split (released or not) is withheld whole, with
    everything derived from it: every item, every box on every phase, its endoscopy boxes."""
    if not split:
        return Item.objects.none().values("case_id")
    return Item.objects.filter(
        split=split, case__isnull=False, case__in=items.values("case_id")
    ).values("case_id")


def withheld_case_ids(items: QuerySet[Item], split: str) -> set[int]:
    return set(withheld_cases(items, split).values_list("case_id", flat=True)) if split else set()


def withheld_box_targets(items: QuerySet[Item], split: str) -> list[dict]:
    """What public files leave out under a withheld split: the targets of its localization
    items, and every box of a withheld case (3D on each phase, 2D on its endoscopy image)."""
    if not split:
        return []
    cases = withheld_cases(items, split)
    targets = items.filter(kind="box").filter(Q(split=split) | Q(case__in=cases))
    hidden = [
        {**(target or {}), "case": case_id}
        for case_id, target in targets.values_list("case_id", "target")
    ]
    boxes = Box.objects.exclude(state__in=Box.LEFT_OUT).filter(
        Q(volume__case__in=cases)
        | Q(image__in=Case.objects.filter(pk__in=cases).values("endoscopy_image"))
    )
    for box in boxes.select_related("volume").order_by("pk"):
        if box.volume is not None:
            hidden.append(
                {"case": box.volume.case_id, "phase": box.volume.phase, "label": box.label,
                 "voxel": box.voxel}
            )  # fmt: skip
        else:
            hidden.append({"label": box.label, "box": box.voxel})
    return hidden


def withheld_input_conflicts(items: QuerySet[Item], split: str) -> list[tuple[str, list[int]]]:
    """Where one task's public input is another's withheld answer: the retrieval items of a
    withheld case ask with one of its reports (the answer of its report items, and the text
    that states its stage). (case code, their indexes) per case, in case order."""
    if not split:
        return []
    found: dict[str, list[int]] = defaultdict(list)
    rows = (
        items.filter(kind="retrieval", case__in=withheld_cases(items, split))
        .order_by("case__case_id", "source_index")
        .values_list("case__case_id", "source_index")
    )
    for code, index in rows:
        found[code].append(index)
    return list(found.items())


def fields_with_values(items: QuerySet[Item]) -> set[str]:
    """The taxonomy and pair fields that hold a value in at least one item (one query)."""
    fields = (*TAXONOMY_FIELDS, "degradation_type", "degradation_severity")
    counts = items.order_by().aggregate(
        **{f: Count("pk", filter=~Q(**{f: ""})) for f in fields},
        clean_twin_id=Count("clean_twin_id"),
    )
    return {name for name, count in counts.items() if count}


def tsv_columns(
    benchmark: Benchmark,
    items: QuerySet[Item],
    *,
    report: bool,
    pair_columns: Sequence[str] = (),
    letters: int = 0,
) -> list[str]:
    """NAME.tsv's header: the imported columns in file order (with option columns up to
    `letters` options), then (for a release) the report, taxonomy and pair columns it lacks."""
    columns = list(benchmark.columns) if benchmark.columns else list(DEFAULT_COLUMNS)
    if not report:
        return header(columns, (), letters)
    present = fields_with_values(items)
    wanted = ["category"]
    if REPORT_COLUMNS[benchmark.family].l2_category in present or "l2-category" in columns:
        wanted.append("l2-category")
    wanted += [_FIELD_COLUMNS.get(f, f) for f in TAXONOMY_FIELDS if f in present]
    if present & {"clean_twin_id", "degradation_type", "degradation_severity"}:
        wanted += pair_columns
    return header(columns, wanted, letters)


def label_fields(items: QuerySet[Item]) -> list[str]:
    """The label sets the classification items ask for (a target without a field: "label")."""
    fields = items.filter(kind="label").order_by().values_list("target__field", flat=True)
    return sorted({str(value or "label") for value in fields.distinct()})


class ReleaseImages:
    """Image bytes as a release writes them: stored JPEG/PNG as they are, other formats as PNG
    (converted once while reused nearby)."""

    CONVERTED = 256

    def __init__(self) -> None:
        self.root = (
            os.path.join(default_storage.location, "")
            if isinstance(default_storage, FileSystemStorage)
            else None
        )
        self.converted: OrderedDict[int, bytes] = OrderedDict()

    def row(self, refs: list[ImageRef]) -> Callable[[Hashable], bytes]:
        """base64 by image id (the TSV writers' image key) for one row, each image read once
        whichever files take it."""
        by_id: dict[Hashable, ImageRef] = {ref.id: ref for ref in refs}
        done: dict[Hashable, bytes] = {}

        def base64(key: Hashable) -> bytes:
            if key not in done:
                done[key] = b64encode(self.data(by_id[key]))
            return done[key]

        return base64

    def data(self, ref: ImageRef) -> bytes:
        if ref.format in stream.PASS_THROUGH:
            return self._stored(ref)
        if ref.id not in self.converted:
            from annotations.imaging.images import encode_for_vlmeval

            self.converted[ref.id] = encode_for_vlmeval(self._stored(ref))
            if len(self.converted) > self.CONVERTED:
                self.converted.popitem(last=False)
        self.converted.move_to_end(ref.id)
        return self.converted[ref.id]

    def _stored(self, ref: ImageRef) -> bytes:
        if self.root is None:
            with default_storage.open(ref.file, "rb") as handle:
                return handle.read()
        path = self.root + ref.file
        with open(path, "rb") as handle:
            data = handle.read()
        # A stored image is named by its hash and never rewritten: another size is damage.
        if len(data) != ref.size:
            raise OSError(f"{path} holds {len(data)} bytes, not the {ref.size} its record says")
        return data

    def stored_path(self, ref: ImageRef) -> str | None:
        """The stored file of a JPEG or PNG, which a release may link to; None otherwise."""
        if self.root is None or ref.format not in stream.PASS_THROUGH:
            return None
        return self.root + ref.file
