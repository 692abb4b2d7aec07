"""Tab-separated records from a byte stream, parsed the way pandas reads a TSV.

VLMEvalKit reads benchmark files with `pandas.read_csv(path, sep='\\t')`: double
quotes group a cell (tabs, newlines and doubled quotes inside), a quote inside an
unquoted cell is literal, blank lines are skipped. Python's csv module in its
non-strict mode parses the same way, one record at a time, so memory stays at one
row however large the file. A line longer than `max_line_bytes` stops the reading as
soon as the limit is passed, so one huge cell never sits whole in memory.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Generator, Iterator
from typing import BinaryIO

from annotations.formats.errors import FormatError, RowProblem

# Base64 image cells are many megabytes; the csv default limit is 128 KiB.
MAX_CELL_CHARS = 2**31 - 1
csv.field_size_limit(MAX_CELL_CHARS)

# Fed after the last line. Real lines never contain NUL (we reject them), so the
# sentinel is unambiguous: it arrives alone when the file ended cleanly, or glued
# to the last cell when the file stopped inside a quoted cell (a truncated file).
_END_SENTINEL = "\x00clinreview-end-of-file\x00"


class _TextProblem(Exception):
    """Raised from inside the line feed, turned into a FormatError with a row."""

    def __init__(self, reason: str, cell: int | None = None, code: str = "unreadable_text") -> None:
        super().__init__(reason)
        self.cell, self.code = cell, code


def read_records(
    stream: BinaryIO, *, max_line_bytes: int | None = None
) -> Generator[tuple[int, list[str]], None, None]:
    """Yield `(row_number, cells)`; the header is row 0, blank lines are skipped.

    Raises `FormatError` for text that is not UTF-8, binary data (NUL bytes), a line
    longer than `max_line_bytes` and a file that ends inside a quoted cell. The caller
    keeps ownership of `stream`.
    """
    records = _Records(_checked_lines(stream, max_line_bytes))
    row_number = 0
    header: list[str] = []
    while True:
        try:
            cells = records.next()
        except StopIteration:
            return
        except _TextProblem as exc:
            column = header[exc.cell] if exc.cell is not None and exc.cell < len(header) else None
            raise FormatError(RowProblem(row_number, column, str(exc), exc.code)) from None
        except csv.Error as exc:
            raise FormatError(
                RowProblem(row_number, None, f"unreadable TSV: {exc}", "unreadable_text")
            ) from None
        if not cells:
            continue
        if _END_SENTINEL in cells[-1]:
            if cells == [_END_SENTINEL]:
                return
            reason = "truncated file: a quoted cell is never closed"
            raise FormatError(RowProblem(row_number, None, reason, "truncated"))
        if not row_number:
            header = cells
        yield row_number, cells
        row_number += 1


class _Records:
    """Records from decoded lines: a line whose cells are plainly delimited is split at C speed
    (most lines of a benchmark: base64 and short texts); any other goes to the csv module,
    which reads on as far as its record goes (a quoted cell may hold newlines and quotes)."""

    def __init__(self, lines: Iterator[str]) -> None:
        self._lines = lines
        self._pushed: list[str] = []
        self._csv = csv.reader(self._feed(), delimiter="\t", quotechar='"', strict=False)

    def _feed(self) -> Iterator[str]:
        while True:
            if self._pushed:
                yield self._pushed.pop()
            else:
                line = next(self._lines, None)
                if line is None:
                    return
                yield line

    def next(self) -> list[str]:
        line = next(self._lines)  # StopIteration ends the records
        cells = _plain_cells(line)
        if cells is not None:
            return cells
        self._pushed.append(line)
        return next(self._csv)


def _plain_cells(line: str) -> list[str] | None:
    """The cells of `line` when splitting it is exactly what the csv module would do: no quote
    at all, or every cell quoted with nothing inside that needs the csv module; else None."""
    if line.endswith("\r\n"):
        body = line[:-2]
    elif line.endswith("\n"):
        body = line[:-1]
    else:
        return None  # the sentinel's line and a last line without newline: the csv module
    if "\r" in body or "\n" in body:
        return None
    if '"' not in body:
        return body.split("\t") if body else []
    if len(body) < 2 or body[0] != '"' or body[-1] != '"':
        return None
    cells = body[1:-1].split('"\t"')
    return None if any('"' in cell for cell in cells) else cells


def _checked_lines(stream: BinaryIO, max_line_bytes: int | None) -> Iterator[str]:
    # Decoding line by line (not in 8 KiB chunks as TextIOWrapper does) lets an
    # encoding error be reported at the row where it is.
    limit = -1 if max_line_bytes is None else max_line_bytes + 1
    for line_number, raw in enumerate(iter(lambda: stream.readline(limit), b""), start=1):
        if len(raw) == limit and not raw.endswith(b"\n"):
            # Nothing more of the line is read: the import is refused here.
            raise _TextProblem(
                f"line {line_number} is longer than {max_line_bytes:,} bytes: a cell is over "
                "the size limit (the rest of the file was not read)",
                cell=raw.count(b"\t"),
                code="cell_too_large",
            )
        if line_number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        if b"\x00" in raw:
            raise _TextProblem(f"binary data (NUL byte) on line {line_number}: not a TSV file")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _TextProblem(
                f"not UTF-8 text on line {line_number}: {exc.reason} (byte 0x{raw[exc.start]:02x})"
            ) from None
    yield _END_SENTINEL + "\n"
