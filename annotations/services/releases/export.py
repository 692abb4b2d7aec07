"""Writing a release's files in one streamed pass, into a temporary folder published by rename."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Sum
from django.utils.translation import gettext

from annotations.formats.jsonexport import dumps_canonical, dumps_canonical_bytes
from annotations.models import Benchmark, Image, ItemImage
from annotations.services.errors import DomainError
from annotations.services.releases.cocofile import write_release_coco
from annotations.services.releases.manifest import SCHEMA_VERSION, write_manifest
from annotations.services.releases.provenance import ChunkProvenance, json_item
from annotations.services.releases.rows import (
    ItemRow,
    chunk_images,
    item_chunks,
    shared_image_ids,
)
from annotations.services.releases.selection import (
    REPORT_COLUMNS,
    check_release_name,
    clean_filters,
    release_items,
    tsv_columns,
)
from annotations.services.releases.sources import ImageRef, Payloads
from annotations.services.releases.tsv import (
    ANSWER_COLUMNS,
    TextCells,
    TsvFile,
    local_path_cell,
    quoted,
    same_cell,
)
from annotations.services.releases.writer import Digester, DigestFile

PART_BYTES = 1 << 30  # VLMEvalKit moves a TSV over 1 GB to its local layout; we split there too
TEMP_MARK = ".partial-"
YOUNG_THRESHOLD = 20_000  # allocations between two young collections while exporting (700)
_NO_IMAGES: list[ImageRef] = []


@dataclass(frozen=True)
class ExportOptions:
    """What a release writes besides NAME.tsv, NAME.json and manifest.json.

    The defaults are the plain snapshot export (imported columns, round-trip exact); a versioned
    release uses `ExportOptions.release()`.
    """

    report_columns: bool = False  # the family's category / l2-category and every taxonomy column
    # NAME_local.tsv + images/, VLMEvalKit's on-disk layout for TSVs over 1 GB: True, False, or
    # None for "when NAME.tsv is larger than part_bytes" (where VLMEvalKit itself would need it).
    local_layout: bool | None = False
    coco: bool = False  # NAME_coco.json with the 2D boxes
    withhold_split: str = ""  # this split goes to NAME_test.tsv, its answers to a separate key
    part_bytes: int | None = None  # also split NAME.tsv into parts when it would be larger
    version: str = ""

    @classmethod
    def release(
        cls,
        *,
        version: str = "",
        withhold_split: str = "",
        part_bytes: int | None = PART_BYTES,
        # Like VLMEvalKit, which switches to NAME_local.tsv + images/ only past 1 GB.
        local_layout: bool | None = None,
    ) -> ExportOptions:
        return cls(
            report_columns=True,
            local_layout=local_layout,
            coco=True,
            withhold_split=withhold_split,
            part_bytes=part_bytes,
            version=version,
        )


@dataclass
class ExportResult:
    folder: Path
    item_count: int
    manifest: dict


@dataclass
class _Tally:
    total: int = 0
    category: Counter = field(default_factory=Counter)
    l2_category: Counter = field(default_factory=Counter)
    split: Counter = field(default_factory=Counter)
    items_sha256: object = field(default_factory=hashlib.sha256)


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
    """Write the release files into out_dir, which appears whole or not at all.

    Files are written into a temporary sibling folder and published by one rename, so a failed
    or killed export leaves no partial release where the release would be. `on_chunk` receives
    the (item id, version) pairs written, chunk by chunk, to record what the release contains.
    """
    name = check_release_name(name or benchmark.name)
    options = options or ExportOptions()
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
        with _long_lived_objects_frozen():
            manifest = export.run(progress, on_chunk)
        if out_dir.exists():
            out_dir.rmdir()
        os.rename(temp, out_dir)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return ExportResult(folder=out_dir, item_count=manifest["items"], manifest=manifest)


class _Export:
    """The state of one export: its open files, image reuse tables and counts."""

    def __init__(self, folder, name, benchmark, include_all, filters, options) -> None:
        self.folder, self.name, self.benchmark = folder, name, benchmark
        self.include_all, self.filters, self.options = include_all, filters, options
        self.items = release_items(benchmark, include_all=include_all, filters=filters)
        self.columns = tsv_columns(benchmark, self.items, report=options.report_columns)
        self.report = REPORT_COLUMNS[benchmark.family] if options.report_columns else None
        self.text_cells = TextCells(self.columns, self.report)
        self.payloads = Payloads()
        self.shared_images = shared_image_ids(self.items)
        self.tally = _Tally()
        self.digester: Digester | None = None
        self.outputs: list = []
        self.parts: list[TsvFile] = []
        large = bool(options.part_bytes) and self._estimated_bytes() > (options.part_bytes or 0)
        self.split_parts = large
        local = large if options.local_layout is None else options.local_layout
        self.images_dir = str(folder / "images") if local else None

    def run(self, progress, on_chunk) -> dict:
        self.digester = Digester()
        # The worker places the local layout's images (one hard link each) while it has room.
        self.payloads.worker = self.digester
        try:
            self._open()
            self._write_json(self._walk(progress, on_chunk))
            self._close_answers()
            if self.options.coco:
                coco = DigestFile(self.folder / f"{self.name}_coco.json", self.digester)
                self.outputs.append(coco)
                write_release_coco(coco, self.items)
            for output in self.outputs:
                output.close()
            self.digester.close()
        except BaseException:
            for output in self.outputs:
                output.discard()
            self.digester.abort()
            raise
        return write_manifest(self)

    # -- files ---------------------------------------------------------------------------------

    def _tsv(self, suffix: str, columns: list[str], header_from: TsvFile | None = None) -> TsvFile:
        tsv = TsvFile(
            self.folder / f"{self.name}{suffix}.tsv",
            self.digester,
            columns,
            shared=self.shared_images,
            header_from=header_from,
        )
        self.outputs.append(tsv)
        return tsv

    def _open(self) -> None:
        self.main = self._tsv("", self.columns)
        self.local = None
        if self.images_dir is not None:
            os.mkdir(self.images_dir)
            self.local = self._tsv("_local", _local_columns(self.columns))
            self.local_beside = self.local.beside(self.main)
        self.test = self.answers = None
        if self.options.withhold_split:
            self.test = self._tsv("_test", [c for c in self.columns if c not in ANSWER_COLUMNS])
            self.answers = DigestFile(self.folder / f"{self.name}_test_answers.json", self.digester)
            self.outputs.append(self.answers)
            header = dumps_canonical({"name": self.name, "split": self.options.withhold_split})
            self.answers.write((header[:-1] + ',"answers":[').encode("utf-8"))
        if self.split_parts:
            self._next_part()

    def _next_part(self) -> None:
        if self.parts:
            # Finished: closed before NAME.tsv goes on, so that the first part, NAME.tsv's
            # first bytes, takes NAME.tsv's digests where it ends.
            self.parts[-1].close()
        self.parts.append(self._tsv(f"_part{len(self.parts) + 1}", self.columns, self.main))

    def _write_json(self, items: Iterator[dict]) -> None:
        out = DigestFile(self.folder / f"{self.name}.json", self.digester)
        self.outputs.append(out)
        header = {
            "benchmark": self.benchmark.name,
            "family": self.benchmark.family,
            "name": self.name,
            "schema_version": SCHEMA_VERSION,
            "version": self.options.version,
        }
        out.write((dumps_canonical(header)[:-1] + ',"items":[').encode("utf-8"))
        for number, item in enumerate(items):
            out.write((b"\n," if number else b"\n") + dumps_canonical_bytes(item))
        out.write(b"\n]}\n")

    def _close_answers(self) -> None:
        if self.answers is not None:
            self.answers.write(b"\n]}\n")

    def _estimated_bytes(self) -> int:
        # Base64 of every distinct image: what NAME.tsv weighs, give or take its text.
        image_ids = ItemImage.objects.filter(item__in=self.items).values("image_id")
        total = Image.objects.filter(id__in=image_ids).aggregate(n=Sum("size_bytes"))["n"]
        return (total or 0) * 4 // 3

    # -- the pass over the items ---------------------------------------------------------------

    def _walk(self, progress, on_chunk) -> Iterator[dict]:
        """Write every TSV row and yield the JSON items, a chunk of items at a time."""
        withheld = self.options.withhold_split
        for chunk, chunk_ids in item_chunks(self.items, self.benchmark):
            images = chunk_images(chunk_ids)
            provenance = ChunkProvenance(chunk, chunk_ids)
            self._count(chunk)
            for item in chunk:
                refs = images.get(item.id, _NO_IMAGES)
                withhold = bool(withheld) and item.split == withheld
                self._write_rows(item, refs, withhold)
                yield json_item(item, refs, provenance, withhold=withhold)
            if on_chunk:
                on_chunk([(item.id, item.version) for item in chunk])
            if progress:
                progress(len(chunk))

    def _write_rows(self, item: ItemRow, refs: list[ImageRef], withhold: bool) -> None:
        cells = self.text_cells(item)
        # A withheld item's images are placed too: images/ holds every image of the release.
        names = [self.payloads.place(self.images_dir, ref) for ref in refs] if self.local else []
        if withhold:
            self._write_answer(item)
            self._write_tsv(self.test, item, refs, cells)
            return
        part = self.parts[-1] if self.parts else None
        if part is not None and part.rows and part.out.size >= (self.options.part_bytes or 0):
            self._next_part()  # only when a row follows: no empty last part
            part = self.parts[-1]
        start = self.main.out.size
        image = self.main.image_cell(item.source_index, refs)
        if part is None:
            self.main.write(cells, image, self.payloads)
        else:
            part_image = part.image_cell(item.source_index, refs)
            if same_cell(image, part_image):
                # The same bytes: written here from the pieces of NAME.tsv's row (while parts
                # are written, image cells are encoded here; the worker hashes twice as much).
                pieces = self.main.write(cells, image, self.payloads, keep=True)
                part.mirror(self.main, start, pieces)
            else:
                self.main.write(cells, image, self.payloads)
                part.write(cells, part_image, self.payloads)
        if self.local is not None:
            cell = quoted(local_path_cell(names) if names else "")
            if self.local_beside:
                self.local.write_beside(self.main, cell)
            else:
                cells["image_path"] = cell
                self.local.write(cells)

    def _write_tsv(self, tsv: TsvFile, item: ItemRow, refs: list[ImageRef], cells: dict) -> None:
        tsv.write(cells, tsv.image_cell(item.source_index, refs), self.payloads)

    def _write_answer(self, item: ItemRow) -> None:
        answer = {
            "index": item.source_index,
            "answer": item.answer,
            "answer_text": item.answer_text,
        }
        first = self.test.rows == 0
        self.answers.write((("\n" if first else "\n,") + dumps_canonical(answer)).encode("utf-8"))

    def _count(self, chunk: list[ItemRow]) -> None:
        tally = self.tally
        tally.total += len(chunk)
        if self.report:
            groups = [self.report.values(item) for item in chunk]
            tally.category.update(category for category, _ in groups)
            tally.l2_category.update(l2 for _, l2 in groups if l2)
        else:
            tally.category.update(item.category for item in chunk)
        tally.split.update(item.split for item in chunk)
        lines = "".join(f"{item.source_index}:{item.version}\n" for item in chunk)
        tally.items_sha256.update(lines.encode())


@contextlib.contextmanager
def _long_lived_objects_frozen() -> Iterator[None]:
    """Keep the process's existing objects (Django, the app: about a hundred thousand) out of
    the garbage collector's full passes while the export runs: an export allocates enough to
    trigger several, and each would scan them all again for nothing.

    Unfrozen afterwards, unless something else (a pre-forking server) froze objects before us.
    The young generation's threshold is raised meanwhile: the rows an export builds die young
    (reference counting frees them), and hundreds of passes over them found nothing to free.
    """
    ours = gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if ours:
            gc.unfreeze()


def _local_columns(columns: list[str]) -> list[str]:
    if "image_path" in columns:
        return [c for c in columns if c != "image"]
    return ["image_path" if c == "image" else c for c in columns]
