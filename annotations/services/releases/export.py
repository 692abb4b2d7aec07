"""A release's files, written in one pass over its items into a partial folder renamed into place."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from django.utils.translation import gettext

from annotations.formats import stream, taskfiles
from annotations.formats.coco import write_coco
from annotations.formats.release_json import json_item
from annotations.formats.release_layout import (
    FORMULA_LISTED,
    REPORT_COLUMNS,
    TEMP_MARK,
    ExportOptions,
    ExportResult,
)
from annotations.formats.stream import HashingFile, JsonItems, TsvWriter
from annotations.models import COLUMN_FIELDS, Benchmark, BoxLabel, ItemKind
from annotations.selectors import release_rows as rows
from annotations.selectors.release_rows import ImageRef, ItemRow
from annotations.services.errors import DomainError
from annotations.services.pair_export import PAIR_TSV_COLUMNS, pair_json_fields, pair_tsv_fields
from annotations.services.releases.provenance import ChunkProvenance
from annotations.services.releases.selection import (
    check_label_sets,
    check_release_name,
    clean_filters,
    release_items,
)
from annotations.services.releases.taskfiles import TaskFiles, as_choice


def release_export(
    *,
    benchmark: Benchmark,
    out_dir: Path,
    name: str | None = None,
    include_all: bool = False,
    filters: dict | None = None,
    progress: Callable[[int], None] | None = None,
    options: ExportOptions | None = None,
    on_chunk: Callable[[list[tuple[int, int]]], None] | None = None,
) -> ExportResult:
    """Write the files into out_dir, which appears whole (renamed from a partial folder) or not
    at all. `on_chunk` gets the (item id, version) pairs written, a chunk at a time."""
    name = check_release_name(name or benchmark.name)
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DomainError(
            gettext("%(folder)s already exists and is not empty; choose a new folder.")
            % {"folder": out_dir}
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{TEMP_MARK}", dir=out_dir.parent))
    try:
        export = _Export(temp, name, benchmark, include_all, clean_filters(filters), options)
        manifest = export.run(progress, on_chunk)
        if out_dir.exists():
            out_dir.rmdir()
        os.rename(temp, out_dir)
        stream.fsync_folder(out_dir.parent)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    formulas = {"total": export.formula_total, "cells": export.formula_cells}
    return ExportResult(out_dir, manifest["items"], manifest, formulas)


class _Export:
    def __init__(self, folder, name, benchmark, include_all, filters, options) -> None:
        self.folder, self.name, self.benchmark = folder, name, benchmark
        self.include_all, self.filters = include_all, filters
        self.options = options = options or ExportOptions()
        self.items = release_items(benchmark, include_all=include_all, filters=filters)
        self.report = REPORT_COLUMNS[benchmark.family] if options.report_columns else None
        self.kinds = rows.kind_counts(
            self.items, self.report.l2_category if self.report else "l2_category"
        )
        # Releases of multiple-choice items only keep their earlier bytes: no kind counts, no
        # task files, no extra layout entries.
        self.kind_counted = bool(set(self.kinds) - {ItemKind.MCQ})
        self.label_sets = benchmark.label_sets or {}
        letters = check_label_sets(self.label_sets, self.items) if "label" in self.kinds else 0
        self.columns = rows.tsv_columns(
            benchmark,
            self.items,
            report=options.report_columns,
            pair_columns=PAIR_TSV_COLUMNS,
            letters=letters,
        )
        self.hidden = rows.withheld_box_targets(self.items, options.withhold_split)
        # A split is decided per case: an item of a withheld case is withheld whatever its own.
        self.withheld_cases = rows.withheld_case_ids(self.items, options.withhold_split)
        self.text_cells = stream.TextCells(
            self.columns, COLUMN_FIELDS, self.report, pair_tsv_fields
        )
        self.shared = rows.shared_image_ids(self.items)
        self.images = rows.ReleaseImages()
        self.files_placed = self.bytes_placed = 0  # the local layout's images/
        self.files: list[HashingFile] = []
        self.counts: dict[str, Counter] = {"category": Counter(), "split": Counter()}
        self.l2: Counter[str] = Counter()
        self.total = 0
        self.items_sha256 = hashlib.sha256()
        self.formula_cells: list[list] = []
        self.formula_total = 0
        self.parts: list[TsvWriter] = []
        self.local: TsvWriter | None = None
        self.test: TsvWriter | None = None
        self.answers: JsonItems | None = None
        self.tasks: TaskFiles | None = None
        self.box_volumes: dict = {}  # the manifest's entry for boxes/ (options.box_volumes)
        # Base64 of every distinct image: about what NAME.tsv weighs.
        weight = rows.images_bytes(self.items) * 4 // 3
        large = bool(options.part_bytes) and weight > options.part_bytes
        self.split_parts = large
        local = large if options.local_layout is None else options.local_layout
        self.images_dir = folder / "images" if local else None

    def _file(self, suffix: str) -> HashingFile:
        out = HashingFile(self.folder / f"{self.name}{suffix}")
        self.files.append(out)
        return out

    def _tsv(self, suffix: str, columns: list[str]) -> TsvWriter:
        return TsvWriter(self._file(f"{suffix}.tsv"), columns, shared=self.shared)

    def run(self, progress, on_chunk) -> dict:
        try:
            self._open()
            self._walk(progress, on_chunk)
            if self.tasks is not None:
                self.tasks.close(self.header)
            if self.options.coco:
                _write_coco(self._file("_coco.json"), self.items, self.hidden)
            if self.options.box_volumes:
                # Imported here: nibabel, pydicom and highdicom stay out of every start-up.
                from annotations.services.box_volumes import release_box_volumes_write

                self.box_volumes = release_box_volumes_write(self.folder, self.items, self.hidden)
            for out in self.files:
                out.close()
        except BaseException:
            for out in self.files:
                out.discard()
            raise
        return self._manifest()

    def _open(self) -> None:
        self.main = self._tsv("", self.columns)
        if self.images_dir is not None:
            os.mkdir(self.images_dir)
            self.local = self._tsv("_local", stream.local_columns(self.columns))
        split = self.options.withhold_split
        if split:
            self.test = self._tsv(
                "_test", [c for c in self.columns if c not in stream.ANSWER_COLUMNS]
            )
            header = {"name": self.name, "split": split}
            self.answers = JsonItems(self._file("_test_answers.json"), header, "answers")
        if self.split_parts:
            self.parts.append(self._tsv("_part1", self.columns))
        self.header = {
            "benchmark": self.benchmark.name,
            "family": self.benchmark.family,
            "name": self.name,
            "schema_version": stream.SCHEMA_VERSION,
            "version": self.options.version,
        }
        self.json = JsonItems(self._file(".json"), self.header)
        if set(self.kinds) - {ItemKind.MCQ, ItemKind.LABEL}:
            self.tasks = TaskFiles(self, self.kinds)

    def _walk(self, progress, on_chunk) -> None:
        withheld = self.options.withhold_split
        for chunk, chunk_ids in rows.item_chunks(self.items, self.benchmark):
            images = rows.chunk_images(chunk_ids)
            provenance = ChunkProvenance(chunk, chunk_ids, self.hidden)
            self._count(chunk)
            if self.tasks is not None:
                self.tasks.chunk(chunk)
            for item in chunk:
                refs = images.get(item.id, [])
                withhold = bool(withheld) and (
                    item.split == withheld or item.case_id in self.withheld_cases
                )
                if item.kind == ItemKind.LABEL:
                    item = as_choice(item, self.label_sets)
                if item.kind in (ItemKind.MCQ, ItemKind.LABEL):
                    self._write_rows(item, refs, withhold)
                else:
                    assert self.tasks is not None  # opened for the kinds other than these two
                    self.tasks.write(item, refs, withhold)
                data = json_item(
                    item, refs, provenance, withhold=withhold, pair_fields=pair_json_fields
                )
                self.json.write(data)
            if on_chunk:
                on_chunk([(item.id, item.version) for item in chunk])
            if progress:
                progress(len(chunk))
        self.json.close()
        if self.answers is not None:
            self.answers.close()

    def note_formulas(self, item: ItemRow, cells: dict[str, str]) -> None:
        for column, text in stream.formula_cells(cells):
            self.formula_total += 1
            if len(self.formula_cells) < FORMULA_LISTED:
                self.formula_cells.append([item.source_index, column, text[:80]])

    def report_values(self, item: ItemRow) -> tuple[str, str]:
        return self.report.values(item) if self.report else (item.category, item.l2_category)

    def _place(self, ref: ImageRef) -> str:
        """Put the image into images/ once, named by its sha256 (a hard link to a stored JPEG or
        PNG, which is never rewritten); return the name."""
        assert self.images_dir is not None  # the local layout
        name = stream.image_file_name(ref.sha256, ref.format)
        source = self.images.stored_path(ref)
        data = partial(self.images.data, ref)
        size = stream.place_image(self.images_dir / name, source, ref.size, data)
        if size is not None:
            self.files_placed += 1
            self.bytes_placed += size
        return name

    def _write_rows(self, item: ItemRow, refs: list[ImageRef], withhold: bool) -> None:
        cells = self.text_cells(item)
        self.note_formulas(item, cells)
        keys = [ref.id for ref in refs]
        base64 = self.images.row(refs)
        names: list[str] = []
        if self.images_dir is not None:  # the local layout (NAME_local.tsv)
            names = [self._place(ref) for ref in refs]
        index = item.source_index
        if withhold:
            assert self.answers is not None and self.test is not None  # opened for the split
            answer = {"index": index, "answer": item.answer, "answer_text": item.answer_text}
            self.answers.write(answer, fast=False)
            self.test.write(cells, index, keys, base64)
            return
        if self.parts:
            part, part_bytes = self.parts[-1], self.options.part_bytes
            assert part_bytes  # parts are written only past a part size (__init__)
            if part.rows and part.out.size >= part_bytes:
                self.parts.append(self._tsv(f"_part{len(self.parts) + 1}", self.columns))
            self.parts[-1].write(cells, index, keys, base64)
        self.main.write(cells, index, keys, base64)
        if self.local is not None:
            self.local.write({**cells, "image_path": stream.local_path_cell(names)})

    def _count(self, chunk: list[ItemRow]) -> None:
        self.total += len(chunk)
        for item in chunk:
            if self.report:
                category, l2 = self.report.values(item)
                self.l2.update([l2] if l2 else [])
            else:
                category = item.category
            self.counts["category"][category] += 1
            self.counts["split"][item.split] += 1
        self.items_sha256.update("".join(f"{i.source_index}:{i.version}\n" for i in chunk).encode())
        if self.kind_counted:
            self.counts.setdefault("kind", Counter()).update(item.kind for item in chunk)

    def _manifest(self) -> dict:
        counts = {key: dict(sorted(counter.items())) for key, counter in self.counts.items()}
        manifest = {
            "name": self.name,
            "version": self.options.version,
            "benchmark": self.benchmark.name,
            "family": self.benchmark.family,
            "schema_version": stream.SCHEMA_VERSION,
            "selection": {
                "include_all": self.include_all,
                "filters": self.filters,
                "withhold_split": self.options.withhold_split,
            },
            "items": self.total,
            "items_sha256": self.items_sha256.hexdigest(),
            "counts": counts,
            "columns": self.main.columns,
            "taxonomy": self.benchmark.taxonomy,
            "box_convention": stream.BOX_CONVENTION,
            "layout": self._layout(),
            "files": {out.path.name: out.digests() for out in self.files},
        }
        if self.report is not None:
            counts["l2-category"] = dict(sorted(self.l2.items()))
            manifest["report_columns"] = {
                "category": self.report.category,
                "l2-category": self.report.l2_category,
            }
        stream.write_manifest(self.folder / "manifest.json", manifest)
        return manifest

    def _layout(self) -> dict:
        name = self.name
        layout: dict = {"tsv": f"{name}.tsv", "json": f"{name}.json"}
        if self.local is not None:
            layout["local"] = {
                "tsv": f"{name}_local.tsv",
                "images": "images/",
                "image_path_relative_to": "images/",
                "image_files": self.files_placed,
                "image_bytes": self.bytes_placed,
            }
        if self.parts:
            layout["parts"] = [
                {"tsv": part.out.path.name, "rows": part.rows, "bytes": part.out.size}
                for part in self.parts
            ]
        if self.test is not None:
            layout["test"] = {
                "split": self.options.withhold_split,
                "tsv": self.test.out.path.name,
                "rows": self.test.rows,
                "answer_key": f"{name}_test_answers.json",
            }
        if self.options.coco:
            layout["coco"] = f"{name}_coco.json"
        if self.options.box_volumes:
            layout["box_volumes"] = self.box_volumes
        if self.kind_counted:
            layout["tsv_rows"] = self.main.rows
            layout.update(taskfiles.task_layout(name, self.tasks) if self.tasks else {})
        return layout


def _write_coco(out: HashingFile, items, hidden: list[dict]) -> None:
    """NAME_coco.json: the 2D boxes on the release's images, without rejected or withdrawn ones
    nor the targets of withheld localization items."""
    images, boxes = rows.coco_rows(items)
    shown = taskfiles.coco_without_targets(boxes, taskfiles.hidden_keys(hidden)[0])
    # A HashingFile takes the bytes write_coco writes; its annotation asks for an IO.
    write_coco(out, images, shown, [label for label, _ in BoxLabel.choices])  # type: ignore[arg-type]
