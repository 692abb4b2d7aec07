"""Rows of the release TSVs: VLMEvalKit quoting, image reuse by index, list cells, local paths.

The writer is the same format as `annotations.formats.vlmeval.write_mcq_tsv` (every cell quoted,
base64 streamed straight to the file) but row by row, so that one pass over the items can feed
several files at once (NAME.tsv, its parts, NAME_local.tsv, NAME_test.tsv).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from pathlib import Path

from annotations.services.imports import COLUMN_FIELDS
from annotations.services.pair_export import pair_tsv_fields
from annotations.services.releases.rows import ItemRow
from annotations.services.releases.selection import ReportColumns
from annotations.services.releases.sources import ImageRef, Payloads
from annotations.services.releases.writer import Digester, DigestFile

# Columns that give the answer away: left out of a withheld test split.
ANSWER_COLUMNS = frozenset({"answer", "gt"})
IMAGE_COLUMNS = ("image", "image_path")


_NUL_ERROR = "a TSV cell cannot hold a NUL character"


def quoted(value: object) -> str:
    """A cell as VLMEvalKit's writer quotes it: always in double quotes, inner quotes doubled."""
    if value.__class__ is not str:
        if value is None:
            return '""'
        value = str(value)
    return '"' + value.replace('"', '""') + '"'


class TsvFile:
    """One TSV being written, with its own image-reuse table.

    A reuse cell must point at a row of the same file, so every file (and every part) keeps its
    own table: image id -> index of the first row holding it, for the images several items show
    (`shared`, None for every image), and for list cells the tuple of image ids -> first index
    (one per CT case or pair, not per item). So memory grows with the shared images, not with
    the release.
    """

    def __init__(
        self,
        path: Path,
        digester: Digester,
        columns: Sequence[str],
        *,
        hand_over: bool = True,
        shared: set[int] | None = None,
        header_from: TsvFile | None = None,
    ) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.out = DigestFile(self.path, digester)
        self.hand_over = hand_over  # may the digest worker write this file's images?
        self._shared = shared
        self.rows = 0
        self.last_text = ("", "")  # text on either side of the image cell of the last row
        self._single: dict[int, int] = {}
        self._multi: dict[tuple[int, ...], int] = {}
        # The text cells on either side of the image cell, worked out once per file.
        at = self.columns.index("image") if "image" in self.columns else len(self.columns)
        self._before = self.columns[:at]
        self._after = self.columns[at + 1 :]
        self._has_image = at < len(self.columns)
        header = ("\t".join(quoted(c) for c in self.columns) + "\n").encode("utf-8")
        if header_from is not None and header_from.columns == self.columns:
            # A part: its header is NAME.tsv's header bytes (`DigestFile.mirror`), so that the
            # first part is NAME.tsv's first bytes exactly and takes its digests.
            self.out.mirror(header_from.out, 0, [header])
        else:
            self.out.write(header)

    def image_cell(self, index: int, refs: Sequence[ImageRef]) -> ImageRef | list[ImageRef] | str:
        """The `image` cell: the image (its base64 is written by `write`), a list of them, a
        reuse reference (str) or ''."""
        if not refs:
            return ""
        if len(refs) == 1:
            image = refs[0]
            if self._shared is not None and image.id not in self._shared:
                return image  # shown by this item only: never reused
            known = self._single.get(image.id)
            if known is not None:
                return str(known)
            self._single[image.id] = index
            return image
        key = tuple(ref.id for ref in refs)
        known = self._multi.get(key)
        if known is not None:
            return str(known)
        self._multi[key] = index
        return list(refs)

    def write(
        self,
        cells: dict[str, str],
        image=None,
        payloads: Payloads | None = None,
        *,
        keep: bool = False,
    ) -> list[bytes] | None:
        """One row: `cells` are the quoted text cells by column (`TextCells`), `image` the image
        cell: a reuse reference or '' (str), an image (`ImageRef`, or its base64 as bytes) or a
        list of images. Base64 goes between the row's text pieces as it is, never copied into
        them; the digest worker writes it when it has room (`DigestFile.fill_image`).

        With `keep`, every byte is written here and the row's pieces are returned, for a part
        that holds the same row (`mirror`)."""
        before = "\t".join([cells[column] for column in self._before])
        if not self._has_image:
            text = before + "\n"
            if "\x00" in text:
                raise ValueError(_NUL_ERROR)
            return self._text_row(text, keep)
        after = "\t".join([cells[column] for column in self._after])
        head = before + "\t" if self._before else ""
        tail = "\t" + after + "\n" if self._after else "\n"
        if "\x00" in head or "\x00" in tail:
            raise ValueError(_NUL_ERROR)
        self.last_text = (head, tail)
        if image is None or image.__class__ is str:
            text = quoted(image)
            if "\x00" in text:
                raise ValueError(_NUL_ERROR)
            return self._text_row(head + text + tail, keep)
        if isinstance(image, list):
            images, opening, separator, closing = image, "\"['", b"', '", "']\""
        else:
            images, opening, separator, closing = (image,), '"', b"", '"'
        write = self.out.write
        kept = [] if keep else None
        piece = (head + opening).encode("utf-8")
        for number, element in enumerate(images):
            if number:
                piece = separator
            write(piece)
            data = self._image(element, payloads, hand_over=self.hand_over and not keep)
            if kept is not None:
                kept += (piece, data)
        piece = (closing + tail).encode("utf-8")
        write(piece)
        self.rows += 1
        if kept is not None:
            kept.append(piece)
        return kept

    def _text_row(self, text: str, keep: bool) -> list[bytes] | None:
        data = text.encode("utf-8")
        self.out.write(data)
        self.rows += 1
        return [data] if keep else None

    def write_beside(self, source: TsvFile, cell: str) -> None:
        """The row `source` has just written, with `cell` (quoted) in place of its image cell:
        the local layout's row, whose columns are NAME.tsv's with image_path for image (see
        `beside`), without joining its text cells again."""
        head, tail = source.last_text
        if "\x00" in cell:
            raise ValueError(_NUL_ERROR)
        self.out.write((head + cell + tail).encode("utf-8"))
        self.rows += 1

    def beside(self, source: TsvFile) -> bool:
        """Whether this file's columns are `source`'s with image_path in place of image."""
        return source._has_image and self.columns == [
            "image_path" if column == "image" else column for column in source.columns
        ]

    def mirror(self, source: TsvFile, start: int, pieces: list[bytes]) -> None:
        """One row that is `source`'s row written at byte `start`, as `pieces`
        (`write(keep=True)`): a part's row that NAME.tsv holds as it is (`DigestFile.mirror`)."""
        self.out.mirror(source.out, start, pieces)
        self.rows += 1

    def _image(
        self, image: ImageRef | bytes, payloads: Payloads | None, *, hand_over: bool
    ) -> bytes | None:
        """Write an image's base64 and return it, or leave it to the worker (None)."""
        if image.__class__ is bytes:
            data = image
        else:
            path = payloads.stored_path(image) if hand_over else None
            if path is not None and self.out.worker_has_room():
                self.out.fill_image(path, image.size)
                return None
            data = payloads.base64(image)
        self.out.write(data)
        return data

    def close(self) -> None:
        self.out.close()

    def discard(self) -> None:
        self.out.discard()

    def digests(self) -> dict[str, object]:
        return self.out.digests()


class TextCells:
    """Every non-image cell of an item's row, quoted, by column: `TextCells(columns, report)(item)`.

    Which field fills which column is worked out once per file, not once per row.
    """

    def __init__(self, columns: Sequence[str], report: ReportColumns | None) -> None:
        self.getters = [(c, _cell_getter(c)) for c in columns if c not in IMAGE_COLUMNS]
        self.report = report
        self.l2_category = "l2-category" in columns
        self.pairs = "pair_id" in columns
        self.image_path = "image_path" in columns

    def __call__(self, item: ItemRow) -> dict[str, str]:
        """The row's text cells, quoted once for every file the row goes to."""
        row = {column: quoted(get(item)) for column, get in self.getters}
        if self.report is not None:
            category, l2 = self.report.values(item)
            row["category"] = quoted(category)
            if self.l2_category:
                row["l2-category"] = quoted(l2)
            if self.pairs:
                row.update((c, quoted(v)) for c, v in pair_tsv_fields(item).items())
        if self.image_path:
            row["image_path"] = quoted(item.extra.get("image_path", ""))
        return row


def _cell_getter(column: str) -> Callable[[ItemRow], object]:
    if column == "index":
        return attrgetter("source_index")
    if column in ("question", "hint", "answer"):
        return attrgetter(column)
    if column == "gt":
        # The answer's text follows the (possibly edited) answer, not the imported cell.
        return attrgetter("answer_text")
    if len(column) == 1 and column.isupper():
        position = ord(column) - ord("A")
        return lambda item: item.options[position] if position < len(item.options) else ""
    if column in COLUMN_FIELDS:
        return attrgetter(COLUMN_FIELDS[column])
    return lambda item: item.extra.get(column, "")


def same_cell(first: object, second: object) -> bool:
    """Whether two image cells that `image_cell` made for the same item's images are written
    as the same bytes: the same reuse reference (or ''), or both the images themselves."""
    if first.__class__ is str or second.__class__ is str:
        return first == second
    return True


def local_path_cell(names: Sequence[str]) -> str:
    """The image_path cell of the local layout: one relative name, or a list literal."""
    if len(names) == 1:
        return names[0]
    return "[" + ", ".join(repr(name) for name in names) + "]"
