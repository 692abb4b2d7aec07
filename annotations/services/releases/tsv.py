"""Rows of the release TSVs: VLMEvalKit quoting, image reuse by index, list cells, local paths.

The writer is the same format as `annotations.formats.vlmeval.write_mcq_tsv` (every cell quoted,
base64 streamed straight to the file) but row by row, so that one pass over the items can feed
several files at once (NAME.tsv, its parts, NAME_local.tsv, NAME_test.tsv).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

from annotations.services.imports import COLUMN_FIELDS
from annotations.services.pair_export import pair_tsv_fields
from annotations.services.releases.rows import ItemRow
from annotations.services.releases.selection import ReportColumns
from annotations.services.releases.sources import Encoded, ImageRef, Payloads
from annotations.services.releases.writer import DigestFile, Hasher

# Columns that give the answer away: left out of a withheld test split.
ANSWER_COLUMNS = frozenset({"answer", "gt"})
IMAGE_COLUMNS = ("image", "image_path")


def quoted(value: object) -> str:
    if value is None:
        return '""'
    text = value if isinstance(value, str) else str(value)
    if "\x00" in text:
        raise ValueError("a TSV cell cannot hold a NUL character")
    return '"' + text.replace('"', '""') + '"'


class TsvFile:
    """One TSV being written, with its own image-reuse table.

    A reuse cell must point at a row of the same file, so every file (and every part) keeps its
    own table: image id -> index of the first row holding it (ints only), and for list cells the
    tuple of image ids -> first index (one per CT case or pair, not per item).
    """

    def __init__(self, path: Path, hasher: Hasher, columns: Sequence[str]) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.out = DigestFile(self.path, hasher)
        self.rows = 0
        self._single: dict[int, int] = {}
        self._multi: dict[tuple[int, ...], int] = {}
        self.out.write(("\t".join(quoted(c) for c in self.columns) + "\n").encode("utf-8"))

    def image_cell(self, index: int, refs: Sequence[ImageRef], payloads: Payloads):
        """Base64 (Encoded), a list of them, a reuse reference (str) or '' for the `image` cell."""
        if not refs:
            return ""
        if len(refs) == 1:
            known = self._single.get(refs[0].id)
            if known is not None:
                return str(known)
            self._single[refs[0].id] = index
            return payloads.base64(refs[0])
        key = tuple(ref.id for ref in refs)
        known = self._multi.get(key)
        if known is not None:
            return str(known)
        self._multi[key] = index
        return [payloads.base64(ref) for ref in refs]

    def write(self, values: dict) -> None:
        write = self.out.write
        pending: list[str] = []
        for position, column in enumerate(self.columns):
            if position:
                pending.append("\t")
            value = values.get(column)
            if isinstance(value, bytes):
                pending.append('"')
                write("".join(pending).encode("utf-8"))
                pending.clear()
                write(value if isinstance(value, Encoded) else base64.b64encode(value))
                pending.append('"')
            elif isinstance(value, list) and value and isinstance(value[0], bytes):
                pending.append("\"['")
                write("".join(pending).encode("utf-8"))
                pending.clear()
                for number, data in enumerate(value):
                    if number:
                        write(b"', '")
                    write(data if isinstance(data, Encoded) else base64.b64encode(data))
                pending.append("']\"")
            else:
                pending.append(quoted(value))
        pending.append("\n")
        write("".join(pending).encode("utf-8"))
        self.rows += 1

    def close(self) -> None:
        self.out.close()

    def digests(self) -> dict[str, object]:
        return self.out.digests()


def text_cells(item: ItemRow, columns: Sequence[str], report: ReportColumns | None) -> dict:
    """Every non-image cell of an item's row, by column."""
    row: dict[str, object] = {}
    for column in columns:
        if column in IMAGE_COLUMNS:
            continue
        if column == "index":
            row[column] = item.source_index
        elif column in ("question", "hint", "answer"):
            row[column] = getattr(item, column)
        elif column == "gt":
            # The answer's text follows the (possibly edited) answer, not the imported cell.
            row[column] = item.answer_text
        elif len(column) == 1 and column.isupper():
            position = ord(column) - ord("A")
            row[column] = item.options[position] if position < len(item.options) else ""
        elif column in COLUMN_FIELDS:
            row[column] = getattr(item, COLUMN_FIELDS[column])
        else:
            row[column] = item.extra.get(column, "")
    if report is not None:
        row["category"], l2 = report.values(item)
        if "l2-category" in columns:
            row["l2-category"] = l2
        if "pair_id" in columns:
            row.update(pair_tsv_fields(item))
    if "image_path" in columns:
        row["image_path"] = item.extra.get("image_path", "")
    return row


def local_path_cell(names: Sequence[str]) -> str:
    """The image_path cell of the local layout: one relative name, or a list literal."""
    if len(names) == 1:
        return names[0]
    return "[" + ", ".join(repr(name) for name in names) + "]"
