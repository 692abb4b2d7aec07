"""Release files written one row at a time: VLMEvalKit TSV rows and JSON items, each file hashed
(md5, sha256) as its bytes are written, so a manifest needs no second read."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from annotations.formats.cells import FORMULA_STARTS, is_formula_like
from annotations.formats.jsonexport import dumps_canonical, dumps_canonical_bytes

BUFFER = 1 << 20
NUL_ERROR = "a TSV cell cannot hold a NUL character"
SCHEMA_VERSION = 2  # of a release's manifest.json and NAME.json
BOX_CONVENTION = (
    "2D boxes: pixels [x0, y0, x1, y1] of the image, end exclusive (COCO bbox = [x0, y0, w, h]). "
    "3D boxes: voxel index ranges [x0, y0, z0, x1, y1, z1], x = column, y = row, z = slice sorted "
    "by ascending position along the slice normal, end exclusive; mm corners are patient LPS "
    "coordinates (origin + direction . (index * spacing)) of the centres of voxels (x0, y0, z0) "
    "and (x1-1, y1-1, z1-1)."
)
ANSWER_COLUMNS = frozenset({"answer", "gt"})  # left out of a withheld split's TSV
PASS_THROUGH = frozenset({"JPEG", "PNG", "MPO"})  # written byte for byte, never re-encoded
EXTENSIONS = {"JPEG": "jpg", "MPO": "jpg", "PNG": "png"}  # other formats are written as PNG
IMAGE_COLUMNS = ("image", "image_path")


class HashingFile:
    """A new binary file (refused if it exists) that knows its size, md5 and sha256."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file = open(self.path, "xb", buffering=0)  # noqa: SIM115 (closed by close())
        self._md5, self._sha256 = hashlib.md5(), hashlib.sha256()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.size = 0

    def write(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)
        self.size += len(data)
        if self._pending_bytes >= BUFFER:
            self._flush()

    def _flush(self) -> None:
        # One buffer per MiB: hashlib releases the GIL on it, and one write call.
        data = b"".join(self._pending)
        self._pending, self._pending_bytes = [], 0
        self._md5.update(data)
        self._sha256.update(data)
        view = memoryview(data)
        while view:
            view = view[self._file.write(view) :]

    def close(self) -> None:
        """Write what is pending and make it durable (the folder is renamed into place next)."""
        if self._file.closed:
            return
        try:
            self._flush()
            os.fsync(self._file.fileno())
        finally:
            self._file.close()

    def discard(self) -> None:
        self._file.close()

    def digests(self) -> dict[str, Any]:
        return {
            "bytes": self.size,
            "md5": self._md5.hexdigest(),
            "sha256": self._sha256.hexdigest(),
        }


def quoted(value: object) -> str:
    """A cell as VLMEvalKit's own writer quotes it: in double quotes, inner quotes doubled."""
    if value is None:
        return '""'
    text = value if value.__class__ is str else str(value)
    return '"' + text.replace('"', '""') + '"'


def formula_cells(cells: Mapping[str, str]) -> list[tuple[str, str]]:
    """(column, text) of the quoted `cells` a spreadsheet would run as formulas: written as they
    are (VLMEvalKit reads them as data), listed so that nobody opens the file as a sheet."""
    found = []
    for column, cell in cells.items():
        if cell[1:2] in FORMULA_STARTS and column != "index":
            text = cell[1:-1].replace('""', '"')
            if is_formula_like(text):
                found.append((column, text))
    return found


class TsvWriter:
    """A VLMEvalKit TSV (every cell quoted, UTF-8), one row at a time.

    An image shown again is written as the index of the first row of this file that holds it
    (VLMEvalKit's reuse reference); several images as a Python list literal of base64 strings.
    Only `shared` images (None: every image) are remembered, so memory grows with the images
    several rows show, not with the file. `lists`: every row's images are written as a list
    literal, one image too, and never as a reuse reference (what a report file promises).
    """

    def __init__(
        self,
        out: HashingFile,
        columns: Sequence[str],
        *,
        shared: set[Hashable] | None = None,
        image_column: str = "image",
        lists: bool = False,
    ) -> None:
        self.out, self.columns, self.rows, self._lists = out, list(columns), 0, lists
        self._shared = shared
        self._seen: dict[Hashable, int] = {}
        at = self.columns.index(image_column) if image_column in self.columns else None
        self._before = self.columns if at is None else self.columns[:at]
        self._after = [] if at is None else self.columns[at + 1 :]
        self._has_image = at is not None
        out.write(("\t".join(quoted(c) for c in self.columns) + "\n").encode("utf-8"))

    def write(
        self,
        cells: Mapping[str, str],
        index: object = None,
        images: Sequence[Hashable] = (),
        base64: Callable[[Hashable], bytes] | None = None,
    ) -> None:
        """One row: `cells` are the quoted text cells by column, `images` the keys of the row's
        images (`base64(key)` gives one's base64) and `index` the row's index."""
        before = "\t".join([cells[column] for column in self._before])
        if not self._has_image:
            return self._text(before + "\n")
        head = before + "\t" if self._before else ""
        tail = "\t" + "\t".join([cells[column] for column in self._after]) if self._after else ""
        reference = self._reference(index, images)
        if reference is not None:
            return self._text(head + quoted(reference) + tail + "\n")
        if "\x00" in head or "\x00" in tail:
            raise ValueError(NUL_ERROR)
        assert base64 is not None
        write = self.out.write
        if len(images) == 1 and not self._lists:
            write((head + '"').encode("utf-8"))
            write(base64(images[0]))
        else:
            write((head + "\"['").encode("utf-8"))
            for number, key in enumerate(images):
                if number:
                    write(b"', '")
                write(base64(key))
            write(b"']")
        write(('"' + tail + "\n").encode("utf-8"))
        self.rows += 1

    def _reference(self, index: object, images: Sequence[Hashable]) -> str | None:
        """'' (no image) or the index of an earlier row with the same images, else None."""
        if not images:
            return ""
        if self._lists:
            return None
        if len(images) == 1:
            key: Hashable = images[0]
            if self._shared is not None and key not in self._shared:
                return None
        else:
            key = tuple(images)
        known = self._seen.get(key)
        if known is not None:
            return str(known)
        self._seen[key] = index  # type: ignore[assignment]
        return None

    def _text(self, text: str) -> None:
        if "\x00" in text:
            raise ValueError(NUL_ERROR)
        self.out.write(text.encode("utf-8"))
        self.rows += 1


class JsonItems:
    """`{...header, "<key>": [item, ...]}` with sorted keys, one item per line."""

    def __init__(self, out: HashingFile, header: Mapping[str, Any], key: str = "items") -> None:
        self.out, self.count = out, 0
        out.write((dumps_canonical(dict(header))[:-1] + f',"{key}":[').encode("utf-8"))

    def write(self, item: Mapping[str, Any], *, fast: bool = True) -> None:
        """`fast` (orjson) writes small floats without an exponent: see `dumps_canonical_bytes`."""
        data = dumps_canonical_bytes(item) if fast else dumps_canonical(item).encode("utf-8")
        self.out.write((b"\n," if self.count else b"\n") + data)
        self.count += 1

    def close(self) -> None:
        self.out.write(b"\n]}\n")


def image_file_name(sha256: str, image_format: str) -> str:
    """An image's name in a release's images/ folder (and COCO file)."""
    return f"{sha256}.{EXTENSIONS.get(image_format, 'png')}"


def place_image(
    target: Path, source: str | None, size: int, data: Callable[[], bytes]
) -> int | None:
    """Put an image at `target` once: a hard link to `source` (a stored image, never rewritten)
    of `size` bytes, or else `data()` written; its size, or None if it was there already."""
    if target.exists():
        return None
    if source is not None:
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        return size
    written = data()
    target.write_bytes(written)
    return len(written)


def local_columns(columns: Sequence[str]) -> list[str]:
    """The columns of NAME_local.tsv, VLMEvalKit's layout with images on disk."""
    if "image_path" in columns:
        return [c for c in columns if c != "image"]
    return ["image_path" if c == "image" else c for c in columns]


def local_path_cell(names: Sequence[str]) -> str:
    """The image_path cell of NAME_local.tsv: one relative name, or a list literal."""
    if len(names) == 1:
        return quoted(names[0])
    return quoted("[" + ", ".join(map(repr, names)) + "]" if names else "")


def write_manifest(path: Path, manifest: Mapping[str, Any]) -> None:
    """manifest.json, indented and sorted, made durable before its folder is renamed."""
    with open(path, "x", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())


def fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class TextCells:
    """Every non-image cell of an item's row, quoted, by column (worked out once per file).

    `item` is any object with the item's fields (`source_index`, `options`, `extra`...);
    `column_fields` maps taxonomy columns to fields, `report` (with `values(item)` ->
    (category, l2-category)) fills the report columns, `pair_cells(item)` the pair columns.
    """

    def __init__(
        self,
        columns: Sequence[str],
        column_fields: Mapping[str, str],
        report: Any = None,
        pair_cells: Callable[[Any], Mapping[str, object]] | None = None,
    ) -> None:
        self.getters = [
            (c, _cell_getter(c, column_fields)) for c in columns if c not in IMAGE_COLUMNS
        ]
        self.report, self.pair_cells = report, pair_cells
        self.l2_category = "l2-category" in columns
        self.pairs = "pair_id" in columns
        self.image_path = "image_path" in columns

    def __call__(self, item: Any) -> dict[str, str]:
        row = {column: quoted(get(item)) for column, get in self.getters}
        if self.report is not None:
            category, l2 = self.report.values(item)
            row["category"] = quoted(category)
            if self.l2_category:
                row["l2-category"] = quoted(l2)
            if self.pairs and self.pair_cells is not None:
                row.update((c, quoted(v)) for c, v in self.pair_cells(item).items())
        if self.image_path:
            row["image_path"] = quoted(item.extra.get("image_path", ""))
        return row


def _cell_getter(column: str, column_fields: Mapping[str, str]) -> Callable[[Any], object]:
    if column == "index":
        return attrgetter("source_index")
    if column in ("question", "hint", "answer"):
        return attrgetter(column)
    if column == "gt":  # follows the (possibly edited) answer, not the imported cell
        return attrgetter("answer_text")
    if len(column) == 1 and column.isupper():
        position = ord(column) - ord("A")
        return lambda item: item.options[position] if position < len(item.options) else ""
    if column in column_fields:
        return attrgetter(column_fields[column])
    return lambda item: item.extra.get(column, "")


@contextlib.contextmanager
def exclusive_lock(path: Path, *, busy: Exception) -> Iterator[None]:
    """Hold an exclusive kernel lock on `path` (raise `busy` if another process holds it):
    released when its process dies, so a killed build never blocks a retry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def sweep_build(target: Path, temp_mark: str, release: tuple[str, str]) -> None:
    """Remove what killed builds of `release` (name, version) left beside `target` (under its
    lock): partial folders, and a folder renamed into place but never recorded as published."""
    for stale in target.parent.glob(f".{target.name}{temp_mark}*"):
        shutil.rmtree(stale, ignore_errors=True)
    manifest = target / "manifest.json"
    if not manifest.exists():
        return
    with contextlib.suppress(ValueError, OSError):
        found = json.loads(manifest.read_text(encoding="utf-8"))
        # Killed between the rename and the database update: the folder is this very release,
        # never recorded as published, so it is rebuilt rather than trusted.
        if (found.get("name"), found.get("version")) == release:
            shutil.rmtree(target)
