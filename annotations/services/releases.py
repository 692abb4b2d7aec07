"""Exporting a benchmark as VLMEvalKit TSV + JSON + manifest, streamed and published atomically."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from annotations.formats.jsonexport import write_items_json
from annotations.formats.vlmeval import write_mcq_tsv
from annotations.imaging.images import encode_for_vlmeval
from annotations.models import Benchmark, Item
from annotations.services.errors import DomainError
from annotations.services.images import image_bytes
from annotations.services.imports import COLUMN_FIELDS

SCHEMA_VERSION = 1
BOX_CONVENTION = (
    "3D boxes: voxel index ranges [x0, y0, z0, x1, y1, z1], x = column, y = row, z = slice sorted by "
    "ascending position along the slice normal, end exclusive; mm corners are patient LPS coordinates "
    "(origin + direction . (index * spacing)) of the centres of voxels (x0, y0, z0) and (x1-1, y1-1, z1-1)."
)
DEFAULT_COLUMNS = [
    "index",
    "image",
    "question",
    "hint",
    "A",
    "B",
    "C",
    "D",
    "answer",
    "category",
    "l2-category",
    "split",
]
CHUNK = 500


@dataclass
class ExportResult:
    folder: Path
    item_count: int
    manifest: dict


def release_items(benchmark: Benchmark, *, include_all: bool, filters: dict | None = None):
    """The items a release holds: curated ones (agreed or adjudicated) unless include_all."""
    items = Item.objects.filter(benchmark=benchmark)
    if not include_all:
        items = items.curated()
    for field_name, value in (filters or {}).items():
        if value not in (None, "", []):
            items = items.filter(
                **({f"{field_name}__in": value} if isinstance(value, list) else {field_name: value})
            )
    return items.order_by("source_index")


def release_export(
    *,
    benchmark: Benchmark,
    out_dir: Path,
    name: str | None = None,
    include_all: bool = False,
    filters: dict | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write NAME.tsv, NAME.json and manifest.json into out_dir, which appears whole or not at all.

    The files are written in a temporary sibling folder and published by one rename, so a failed
    or killed export leaves no partial release where the release would be.
    """
    name = name or benchmark.name
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DomainError(f"{out_dir} already exists and is not empty; choose a new folder.")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    try:
        items = release_items(benchmark, include_all=include_all, filters=filters)
        counts = _write_files(temp, name, benchmark, items, progress)
        manifest = _manifest(temp, name, benchmark, counts, include_all, filters)
        if out_dir.exists():
            out_dir.rmdir()
        os.rename(temp, out_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return ExportResult(folder=out_dir, item_count=counts["total"], manifest=manifest)


def _columns(benchmark: Benchmark) -> list[str]:
    return list(benchmark.columns) if benchmark.columns else list(DEFAULT_COLUMNS)


def _iter_items(items) -> Iterator[Item]:
    yield from items.prefetch_related("item_images__image").iterator(chunk_size=CHUNK)


def _write_files(folder: Path, name: str, benchmark: Benchmark, items, progress) -> dict:
    columns = _columns(benchmark)
    counts: dict = {"total": 0, "category": Counter(), "split": Counter()}
    first_index_of_image: dict[int, int] = {}

    def tsv_rows() -> Iterator[dict]:
        for item in _iter_items(items):
            counts["total"] += 1
            counts["category"][item.category] += 1
            counts["split"][item.split] += 1
            yield _tsv_row(item, columns, first_index_of_image)
            if progress:
                progress(1)

    with open(folder / f"{name}.tsv", "wb") as out:
        write_mcq_tsv(out, columns, tsv_rows())
    header = {
        "benchmark": benchmark.name,
        "family": benchmark.family,
        "schema_version": SCHEMA_VERSION,
    }
    with open(folder / f"{name}.json", "wb") as out:
        write_items_json(out, header, (_json_item(item) for item in _iter_items(items)))
    return counts


def _image_cell(item: Item, first_index_of_image: dict[int, int]):
    links = list(item.item_images.all())
    if not links:
        return ""
    if len(links) == 1:
        image = links[0].image
        # An image shared by several items is written once; later rows point at that row's index.
        if image.id in first_index_of_image:
            return str(first_index_of_image[image.id])
        first_index_of_image[image.id] = item.source_index
        return encode_for_vlmeval(image_bytes(image))
    return [encode_for_vlmeval(image_bytes(link.image)) for link in links]


def _tsv_row(item: Item, columns: list[str], first_index_of_image: dict[int, int]) -> dict:
    row: dict[str, object] = {}
    for column in columns:
        if column == "index":
            row[column] = item.source_index
        elif column == "image":
            row[column] = _image_cell(item, first_index_of_image)
        elif column in ("question", "hint", "answer"):
            row[column] = getattr(item, column)
        elif len(column) == 1 and column.isupper():
            position = ord(column) - ord("A")
            row[column] = item.options[position] if position < len(item.options) else ""
        elif column in COLUMN_FIELDS:
            row[column] = getattr(item, COLUMN_FIELDS[column])
        else:
            row[column] = item.extra.get(column, "")
    return row


def _json_item(item: Item) -> dict:
    return {
        "index": item.source_index,
        "question": item.question,
        "hint": item.hint,
        "options": list(item.options),
        "answer": item.answer,
        "answer_text": item.answer_text,
        "taxonomy": item.taxonomy(),
        "extra": item.extra,
        "status": item.status,
        "revision": item.version,
        "images": [link.image.sha256 for link in item.item_images.all()],
        "degradation": (
            {
                "type": item.degradation_type,
                "severity": item.degradation_severity,
                "params": item.degradation_params,
                "seed": item.degradation_seed,
            }
            if item.degradation_type
            else None
        ),
    }


def _digests(path: Path) -> dict[str, str]:
    md5, sha256 = hashlib.md5(), hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            md5.update(chunk)
            sha256.update(chunk)
    return {"md5": md5.hexdigest(), "sha256": sha256.hexdigest(), "bytes": path.stat().st_size}


def _manifest(
    folder: Path, name: str, benchmark: Benchmark, counts: dict, include_all: bool, filters
) -> dict:
    files = {path.name: _digests(path) for path in sorted(folder.iterdir())}
    manifest = {
        "name": name,
        "benchmark": benchmark.name,
        "family": benchmark.family,
        "schema_version": SCHEMA_VERSION,
        "selection": {"include_all": include_all, "filters": filters or {}},
        "items": counts["total"],
        "counts": {
            "category": dict(sorted(counts["category"].items())),
            "split": dict(sorted(counts["split"].items())),
        },
        "taxonomy": benchmark.taxonomy,
        "box_convention": BOX_CONVENTION,
        "files": files,
    }
    with open(folder / "manifest.json", "w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")
    return manifest
