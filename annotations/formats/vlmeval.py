"""VLMEvalKit image multiple-choice TSV: a strict streaming reader and a fast writer.

See FORMATS.md ("VLMEvalKit image multiple-choice TSV"). The reader yields one
`McqRow` per good row and collects a `RowProblem` for every bad one, so an import
can report all of them at once; the writer streams rows and base64 straight to a
binary file.
"""

from __future__ import annotations

import base64
import math
import os
import string
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import BinaryIO

from annotations.formats.cells import (
    CellError,
    ImageCell,
    ReadLimits,
    is_formula_like,
    metadata_warnings,
    parse_image_cell,
    parse_integer,
    parse_path_cell,
)
from annotations.formats.errors import FormatError, RowProblem, RowWarning
from annotations.formats.records import read_records
from annotations.imaging.images import ImageInfo

REQUIRED_COLUMNS = ("index", "question", "answer")
IMAGE_COLUMNS = ("image", "image_path")
_CORE_COLUMNS = frozenset({"index", "image", "image_path", "question", "hint", "answer"})
_OPTION_LETTERS = frozenset(string.ascii_uppercase)
# Room on a line for the other cells of a row beside one cell of the largest size.
_LINE_SLACK_BYTES = 1024**2


@dataclass
class McqRow:
    """One multiple-choice question as read from a benchmark file.

    Exactly one of `images` (decoded bytes) and `image_ref` (index of the row
    whose image is reused) is set, or neither when the file only has image_path.
    Validated images come without their metadata, with their facts in `image_infos`.
    `options` holds every option column of the file in order ('' when empty);
    `extra` every other column in file order.
    """

    row: int
    index: int
    images: list[bytes]
    image_ref: int | None
    image_paths: list[str]
    question: str
    hint: str
    options: dict[str, str]
    answer: str
    extra: dict[str, str]
    image_infos: list[ImageInfo] = field(default_factory=list)


@dataclass(frozen=True)
class _Layout:
    columns: tuple[str, ...]
    position: dict[str, int]
    option_letters: tuple[str, ...]
    extra_columns: tuple[str, ...]

    @classmethod
    def from_header(cls, header: list[str], required: Sequence[str]) -> _Layout:
        problems = _header_problems(header, required)
        if problems:
            raise FormatError(problems)
        return cls(
            columns=tuple(header),
            position={name: number for number, name in enumerate(header)},
            option_letters=tuple(name for name in header if name in _OPTION_LETTERS),
            extra_columns=tuple(
                name for name in header if name not in _CORE_COLUMNS | _OPTION_LETTERS
            ),
        )

    def cell(self, cells: list[str], name: str) -> str:
        position = self.position.get(name)
        return "" if position is None else cells[position]

    def formula_like(self, number: int, cells: list[str]) -> Iterator[RowWarning]:
        """Text cells a spreadsheet would run as formulas (kept verbatim, worth a warning)."""
        for name, cell in zip(self.columns, cells, strict=True):
            if name not in ("image", "index") and is_formula_like(cell):
                yield RowWarning(number, name, "formula_like_cell", cell[:80])


def _header_problems(header: list[str], required: Sequence[str]) -> list[RowProblem]:
    problems = []
    seen: set[str] = set()
    for number, name in enumerate(header, start=1):
        if not name.strip():
            problems.append(
                RowProblem(0, None, f"column {number} of the header has no name", "unnamed_column")
            )
        elif name in seen:
            problems.append(RowProblem(0, name, "duplicate column name", "duplicate_column"))
        seen.add(name)
    for name in dict.fromkeys(required):  # a family may repeat a core column: say it once
        if name not in seen:
            problems.append(RowProblem(0, name, "missing required column", "missing_column"))
    if not seen.intersection(IMAGE_COLUMNS):
        problems.append(
            RowProblem(
                0, "image", "missing required column (or image_path)", "missing_image_column"
            )
        )
    return problems


class McqTsvReader:
    """Stream `McqRow`s out of a VLMEvalKit MCQ TSV (a path or a binary stream).

    Iterate once. Bad rows are not yielded; they land in `problems` (sorted by
    row when iteration ends, image reuse checked last), so a caller must look at
    `problems` after the loop before trusting what it read. Whole-file problems
    (and a line past the size limit, at once) raise `FormatError`. A path is closed
    when iteration ends (or on `close()`); a stream stays owned by the caller.
    """

    family_columns: tuple[str, ...] = ()

    def __init__(
        self,
        source: str | os.PathLike[str] | BinaryIO,
        *,
        validate_images: bool = True,
        limits: ReadLimits | None = None,
    ):
        self.problems: list[RowProblem] = []
        # Imported as they are but worth a curator's look; the import report lists them.
        self.warnings: list[RowWarning] = []
        self._source = source
        self._validate_images = validate_images
        self._limits = limits or ReadLimits()
        self._size = 0
        self._stream: BinaryIO | None = None
        self._records: Generator[tuple[int, list[str]], None, None] | None = None
        self._layout: _Layout | None = None
        self._iterated = False
        self._first_row_of_index: dict[int, int] = {}
        self._indexes_with_image: set[int] = set()
        self._references: list[tuple[int, int]] = []

    @property
    def columns(self) -> list[str]:
        """The header, in file order."""
        return list(self._started().columns)

    @property
    def option_letters(self) -> list[str]:
        """The option columns (single upper-case letters), in file order."""
        return list(self._started().option_letters)

    def fraction_read(self) -> float:
        """How far into the file the reader is, from 0 to 1 (for a progress bar)."""
        if self._stream is None:
            return 1.0 if self._iterated else 0.0
        try:
            return min(1.0, self._stream.tell() / self._size) if self._size else 0.0
        except (OSError, ValueError):
            return 0.0

    def __iter__(self) -> Iterator[McqRow]:
        if self._iterated:
            raise RuntimeError("a reader can be iterated only once")
        self._iterated = True
        layout = self._started()
        return self._rows(layout)

    def __enter__(self) -> McqTsvReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def header_problems(self) -> list[RowProblem]:
        """The header checked alone, before any row is read (an upload's quick check)."""
        try:
            self._started()
        except FormatError as error:
            return list(error.problems)
        finally:
            self.close()
        return []

    def close(self) -> None:
        """Release the file if the reader opened it."""
        if self._records is not None:
            self._records.close()
        if self._stream is not None and self._stream is not self._source:
            self._stream.close()
        self._stream = None

    def check_family(self, row: McqRow) -> list[RowProblem]:
        """Family-specific checks; may normalise `row.extra` in place."""
        return []

    def _started(self) -> _Layout:
        if self._layout is not None:
            return self._layout
        if isinstance(self._source, str | os.PathLike):
            self._stream = open(self._source, "rb")  # noqa: SIM115 - closed by close()
        else:
            self._stream = self._source
        try:
            self._size = _stream_size(self._stream)
            max_line = self._limits.max_cell_bytes + _LINE_SLACK_BYTES
            self._records = read_records(self._stream, max_line_bytes=max_line)
            header = next(self._records, None)
            if header is None:
                raise FormatError(RowProblem(0, None, "empty file: no header row", "empty_file"))
            self._layout = _Layout.from_header(header[1], (*REQUIRED_COLUMNS, *self.family_columns))
        except BaseException:
            self.close()
            raise
        return self._layout

    def _rows(self, layout: _Layout) -> Iterator[McqRow]:
        assert self._records is not None
        try:
            for number, cells in self._records:
                row, problems = self._parse(layout, number, cells)
                if problems or row is None:
                    self.problems.extend(problems)
                    continue
                self._remember_images(row)
                yield row
            self.problems.extend(self._dangling_references())
            self.problems.sort(key=lambda problem: problem.row)
        finally:
            self.close()

    def _parse(
        self, layout: _Layout, number: int, cells: list[str]
    ) -> tuple[McqRow | None, list[RowProblem]]:
        if len(cells) != len(layout.columns):
            reason = f"expected {len(layout.columns)} cells as in the header, got {len(cells)}"
            return None, [RowProblem(number, None, reason, "cell_count")]
        problems: list[RowProblem] = []

        def report(column: str, reason: str, code: str = "") -> None:
            problems.append(RowProblem(number, column, reason, code))

        index = self._parse_index(layout.cell(cells, "index"), number, report)
        question = layout.cell(cells, "question")
        if not question.strip():
            report("question", "empty question", "empty_question")
        options = {letter: cells[layout.position[letter]] for letter in layout.option_letters}
        answer = layout.cell(cells, "answer").strip()
        wrong_answer = answer_problem(answer, options)
        if wrong_answer:
            report("answer", wrong_answer, "bad_answer")
        image, paths = self._parse_images(layout, cells, report)
        self.warnings.extend(layout.formula_like(number, cells))
        self.warnings.extend(metadata_warnings(number, "image", image.removed))
        row = McqRow(
            row=number,
            index=-1 if index is None else index,
            images=image.images,
            image_ref=image.reference,
            image_paths=paths,
            question=question,
            hint=layout.cell(cells, "hint"),
            options=options,
            answer=answer,
            extra={name: cells[layout.position[name]] for name in layout.extra_columns},
            image_infos=image.infos,
        )
        problems.extend(self.check_family(row))
        return row, problems

    def _parse_index(self, text: str, number: int, report: Callable[..., None]) -> int | None:
        index = parse_integer(text)
        if index is None:
            report("index", f"not an integer: {text!r}", "bad_index")
        elif index in self._first_row_of_index:
            report(
                "index",
                f"duplicate index {index} (first used in row {self._first_row_of_index[index]})",
                "duplicate_index",
            )
        else:
            self._first_row_of_index[index] = number
        return index

    def _parse_images(
        self, layout: _Layout, cells: list[str], report: Callable[..., None]
    ) -> tuple[ImageCell, list[str]]:
        paths: list[str] = []
        try:
            paths = parse_path_cell(layout.cell(cells, "image_path"))
        except CellError as exc:
            report("image_path", str(exc))
        if "image" not in layout.position:
            if not paths:
                report("image_path", "empty image_path")
            return ImageCell(), paths
        try:
            image = parse_image_cell(
                layout.cell(cells, "image"),
                validate_images=self._validate_images,
                limits=self._limits,
            )
        except CellError as exc:
            report("image", str(exc), exc.code)
            image = ImageCell()
        return image, paths

    def _remember_images(self, row: McqRow) -> None:
        if row.images:
            self._indexes_with_image.add(row.index)
        elif row.image_ref is not None:
            self._references.append((row.row, row.image_ref))

    def _dangling_references(self) -> Iterator[RowProblem]:
        for number, reference in self._references:
            if reference in self._indexes_with_image:
                continue
            if reference in self._first_row_of_index:
                reason = f"reuses the image of index {reference}, which holds no usable image"
            else:
                reason = f"reuses the image of index {reference}, but no row has that index"
            yield RowProblem(number, "image", reason, "image_reference")


def _stream_size(stream: BinaryIO) -> int:
    try:
        return os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        return 0


def answer_problem(answer: str, options: Mapping[str, str]) -> str | None:
    """Why `answer` is not the letter of a non-empty option, or None when it is."""
    if not answer:
        return "empty answer"
    if answer not in options:
        letters = ", ".join(options) or "none"
        return f"answer {answer!r} is not an option letter of this file ({letters})"
    if not options[answer].strip():
        return f"answer {answer!r} points at an empty option"
    return None


def write_mcq_tsv(
    out: BinaryIO, columns: Sequence[str], rows: Iterable[Mapping[str, object]]
) -> None:
    """Stream a VLMEvalKit TSV to `out`: UTF-8, header, every cell quoted.

    This writes a benchmark's *source* file, as its authors publish it, from rows held in
    memory: the demo benchmarks (`demo/`, `seed_demo`), the sample files in `fixtures/` and the
    reader's round-trip tests. The caller decides each cell, reuse by index included. A release
    is written by `formats.stream.TsvWriter` instead, which takes cells already quoted from the
    database, finds the reuse itself and hashes the bytes as they are written.

    A cell may be `bytes` (one image, written as base64), a list of `bytes`
    (several images, a Python list literal), `None`/'' (empty cell), or anything
    else (written as `str()`; an `int` in the image column is a reuse reference).
    Base64 is written straight to `out`, never joined into a line, so memory does
    not grow with image size or row count.
    """
    _check_header(columns)
    out.write(("\t".join(_quoted(name) for name in columns) + "\n").encode("utf-8"))
    known = set(columns)
    for number, row in enumerate(rows, start=1):
        unknown = row.keys() - known
        if unknown:
            raise ValueError(f"row {number} has values for unknown columns {sorted(unknown)}")
        _write_row(out, columns, row)


def _check_header(columns: Sequence[str]) -> None:
    if not columns:
        raise ValueError("a TSV needs at least one column")
    if len(set(columns)) != len(columns):
        raise ValueError(f"duplicate column names in {list(columns)}")


def _write_row(out: BinaryIO, columns: Sequence[str], row: Mapping[str, object]) -> None:
    pending: list[str] = []
    for position, column in enumerate(columns):
        if position:
            pending.append("\t")
        value = row.get(column)
        if _is_image_value(value):
            pending.append('"')
            out.write("".join(pending).encode("utf-8"))
            pending.clear()
            _write_base64(out, value)  # type: ignore[arg-type]
            pending.append('"')
        else:
            pending.append(_quoted(value))
    pending.append("\n")
    out.write("".join(pending).encode("utf-8"))


def _is_image_value(value: object) -> bool:
    if isinstance(value, bytes | bytearray | memoryview):
        return True
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(item, bytes | bytearray | memoryview) for item in value)
    )


def _write_base64(out: BinaryIO, value: bytes | Sequence[bytes]) -> None:
    # Base64 never contains a quote or a tab, so it needs no csv escaping.
    if isinstance(value, bytes | bytearray | memoryview):
        out.write(base64.b64encode(value))
        return
    out.write(b"['")
    for number, image in enumerate(value):
        if number:
            out.write(b"', '")
        out.write(base64.b64encode(image))
    out.write(b"']")


def _quoted(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '""'
    if isinstance(value, list | tuple) and not value:
        return '""'
    text = value if isinstance(value, str) else str(value)
    if "\x00" in text:
        raise ValueError("a TSV cell cannot hold a NUL character")
    return '"' + text.replace('"', '""') + '"'
