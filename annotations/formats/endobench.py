"""EndoBench: its TSV (a VLMEvalKit MCQ TSV with fixed columns) and its JSON release."""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from annotations.formats.cells import ReadLimits, metadata_warnings
from annotations.formats.errors import FormatError, RowProblem, RowWarning
from annotations.formats.jsontext import NUL_REASON, first_nul
from annotations.formats.paths import UnsafePathError, resolve_image_path
from annotations.formats.vlmeval import McqRow, McqTsvReader, answer_problem
from annotations.imaging.images import ImageError, ImageInfo, prepare_image

TAXONOMY_FIELDS = ("category", "task", "subtask", "scene", "dataset")
# The columns an EndoBench TSV must have. Its option columns run A–F, E and F mostly empty, but a
# file of four options (A–D, as VLMEvalKit's own MCQ files) is the same benchmark: the option
# columns are read as VLMEvalKit reads them, however many there are.
ENDOBENCH_TSV_COLUMNS = (
    "index",
    "question",
    *TAXONOMY_FIELDS,
    "answer",
    "gt",
    "A",
    "B",
)
_JSON_REQUIRED_KEYS = ("question", "options", "answer", "image_path")
JSON_KEYS = ("id", "question", "options", "answer", "gt", *TAXONOMY_FIELDS, "image_path")
# Keys the reader maps itself; any other key of an item becomes an extra column of its own.
_MAPPED_KEYS = frozenset({*JSON_KEYS, "hint"})
IMAGES_FOLDER = "EndoBench-Images"
TSV_OPTION_COLUMNS = 6  # EndoBench's TSV has A–F, E and F mostly empty


class EndoBenchTsvReader(McqTsvReader):
    """A VLMEvalKit MCQ TSV reader that also requires EndoBench's columns."""

    family_columns = ENDOBENCH_TSV_COLUMNS


class EndoBenchJsonReader:
    """Read EndoBench's JSON array and its images from disk, one item at a time.

    Images are looked up next to the JSON file, then in its `EndoBench-Images/`
    folder; paths leaving those folders are refused. The JSON is streamed (ijson), never
    loaded whole: a first pass learns the header (option letters, extra keys), the second
    yields the rows, so memory stays flat however many items the file holds (a pool of
    500,000). Rows carry the original `image_path` in `image_paths` and the image bytes in
    `images`; a later item naming the same image file reuses the first one's image by index
    (`image_ref`, as a VLMEvalKit TSV does), so a file shared by many questions is read once.
    Bad items land in `problems`, as with `McqTsvReader`.

    `columns` is the VLMEvalKit header the items map to, so that an import of this file exports
    as its TSV would (FORMATS.md, EndoBench): `index` from `id`, `image` for the image file,
    `image_path`, the question, EndoBench's taxonomy, `answer`, `gt`, options `A`… by position,
    then every other key as an extra column of its own. An `id` that is not an integer is kept
    as an `id` column (the index is then the item's position).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        validate_images: bool = True,
        limits: ReadLimits | None = None,
    ) -> None:
        self.path = Path(path)
        self.problems: list[RowProblem] = []
        self.warnings: list[RowWarning] = []
        self._validate_images = validate_images
        self._limits = limits or ReadLimits()
        self._done = 0
        self._folders = (self.path.parent, self.path.parent / IMAGES_FOLDER)
        self._shape: _Shape | None = None

    @property
    def columns(self) -> list[str]:
        """The VLMEvalKit TSV header of the items (EndoBench's TSV order, extra keys last)."""
        core = ["index", "image", "image_path", "question"]
        if self._scanned().has_hint:
            core.append("hint")
        core += ["category", "task", "subtask", "scene", "answer", "dataset", "gt"]
        core += self.option_letters
        return core + self._extra_columns()

    def _extra_columns(self) -> list[str]:
        shape = self._scanned()
        extra = [key for key in shape.extra_keys if not _clashes(key)]
        return extra + ["id"] * shape.keep_id

    def close(self) -> None:
        """Nothing to release (images are read and closed one by one); for API parity."""

    def __enter__(self) -> EndoBenchJsonReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def option_letters(self) -> list[str]:
        """Letters A–F as in EndoBench's TSV, or A.. up to the longest option list if longer."""
        longest = self._scanned().longest_options
        return list(string.ascii_uppercase[: min(max(longest, TSV_OPTION_COLUMNS), 26)])

    def fraction_read(self) -> float:
        """How many of the file's items were read, from 0 to 1 (for a progress bar)."""
        count = self._shape.count if self._shape else 0
        return self._done / count if count else 0.0

    def __iter__(self) -> Iterator[McqRow]:
        self.problems = []
        letters, extra_columns = self.option_letters, self._extra_columns()
        seen = _SeenIds()
        duplicates: dict[int, list[int]] = {}  # id -> rows repeating it, told at the end
        first_of_path: dict[str, int] = {}  # image path -> index of the row that read it
        for number, item in enumerate(_stream_items(self.path), start=1):
            self._done = number
            path = item.get("image_path") if isinstance(item, dict) else None
            reuse = first_of_path.get(path) if isinstance(path, str) else None
            row, problems = self._parse_item(number, item, letters, extra_columns, reuse)
            if row is not None and seen.seen(row.index):
                duplicates.setdefault(row.index, []).append(len(self.problems) + len(problems))
                problems.append(RowProblem(number, "id", f"duplicate id {row.index}"))
            elif row is not None:
                seen.add(row.index)
            if problems or row is None:
                self.problems.extend(problems)
                continue
            if reuse is None and isinstance(path, str):
                first_of_path.setdefault(path, row.index)
            yield row
        if duplicates:
            self._name_first_rows(duplicates)

    def _name_first_rows(self, duplicates: dict[int, list[int]]) -> None:
        """Say in which row each duplicated id was first used (one more pass, only when the
        file has duplicates: remembering every id's row would cost memory per item)."""
        first: dict[int, int] = {}
        for number, item in enumerate(_stream_items(self.path), start=1):
            if isinstance(item, dict):
                index = _index(item.get("id"), number)
                if index in duplicates and index not in first:
                    first[index] = number
        for index, positions in duplicates.items():
            for position in positions:
                problem = self.problems[position]
                reason = f"duplicate id {index} (first used in row {first.get(index, '?')})"
                self.problems[position] = RowProblem(problem.row, "id", reason)

    def _scanned(self) -> _Shape:
        if self._shape is None:
            self._shape = _scan(self.path)
        return self._shape

    def _parse_item(
        self,
        number: int,
        item: Any,
        letters: list[str],
        extra_columns: list[str],
        reuse: int | None = None,
    ) -> tuple[McqRow | None, list[RowProblem]]:
        if not isinstance(item, dict):
            return None, [RowProblem(number, None, "item is not a JSON object", "not_an_object")]
        nul = first_nul(item)
        if nul is not None:
            return None, [RowProblem(number, nul, f"{nul} {NUL_REASON}", "nul_character")]
        problems = [
            RowProblem(number, key, "missing key", "missing_column")
            for key in _JSON_REQUIRED_KEYS
            if key not in item
        ]
        if problems:
            return None, problems
        problems += [
            RowProblem(number, key if key.strip() else None, _clashes(key))
            for key in item
            if key not in _MAPPED_KEYS and _clashes(key)
        ]
        options, option_problem = _options(item["options"])
        if option_problem:
            problems.append(RowProblem(number, "options", option_problem))
        # Every option column of the file, '' when empty, as the TSV reader gives them.
        options |= {letter: "" for letter in letters if letter not in options}
        question = _text(item["question"])
        if not question.strip():
            problems.append(RowProblem(number, "question", "empty question", "empty_question"))
        answer = _text(item["answer"]).strip()
        wrong_answer = answer_problem(answer, options)
        if wrong_answer:
            problems.append(RowProblem(number, "answer", wrong_answer, "bad_answer"))
        image_path = _text(item["image_path"])
        image, info = (
            (None, None) if reuse is not None else self._read_image(number, image_path, problems)
        )
        row = McqRow(
            row=number,
            index=_index(item.get("id"), number),
            images=[image] if image is not None else [],
            image_infos=[info] if info is not None else [],
            image_ref=reuse,
            image_paths=[image_path],
            question=question,
            hint=_text(item.get("hint")),
            options=options,
            answer=answer,
            extra=_extra(item, extra_columns),
        )
        return row, problems

    def _read_image(
        self, number: int, text: str, problems: list[RowProblem]
    ) -> tuple[bytes | None, ImageInfo | None]:
        """The image without its metadata (when validated), or a problem."""
        try:
            path = resolve_image_path(text, self._folders)
            size = path.stat().st_size
            if size > self._limits.max_cell_bytes:
                raise ImageError(
                    f"image file of {size:,} bytes is over the limit of "
                    f"{self._limits.max_cell_bytes:,}"
                )
            data = path.read_bytes()
            if not self._validate_images:
                return data, None
            prepared = prepare_image(data, max_pixels=self._limits.max_image_pixels)
        except (UnsafePathError, FileNotFoundError, ImageError, OSError) as exc:
            problems.append(RowProblem(number, "image_path", str(exc)))
            return None, None
        self.warnings.extend(metadata_warnings(number, "image_path", [prepared.removed]))
        return prepared.data, prepared.info


@dataclass
class _Shape:
    """What the first pass learns of the whole file: the header depends on every item."""

    count: int = 0
    has_hint: bool = False
    longest_options: int = 0
    extra_keys: dict[str, None] = field(default_factory=dict)
    keep_id: bool = False


def _scan(path: Path) -> _Shape:
    shape = _Shape()
    for item in _stream_items(path):
        shape.count += 1
        if not isinstance(item, dict):
            continue
        shape.has_hint = shape.has_hint or "hint" in item
        if isinstance(item.get("options"), list):
            shape.longest_options = max(shape.longest_options, len(item["options"]))
        for key in item:
            if key not in _MAPPED_KEYS and key not in shape.extra_keys:
                shape.extra_keys[key] = None
        if not shape.keep_id and "id" in item and not _id_is_index(item["id"]):
            shape.keep_id = True
    if not shape.count:
        raise FormatError(RowProblem(0, None, "empty file: the array holds no item", "no_items"))
    return shape


_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"


def _stream_items(path: Path) -> Iterator[Any]:
    """The items of the file's top-level array, one at a time."""
    with open(path, "rb") as handle:
        first = _first_byte(handle)
        if first != b"[":
            _refuse_non_array(handle)
        try:
            yield from ijson.items(handle, "item", use_float=True)
        except ijson.JSONError as error:
            raise FormatError(_json_problem(error)) from None


def _first_byte(handle: BinaryIO) -> bytes:
    """The first byte after a BOM and white space; the handle is left just before it."""
    if handle.read(3) != _BOM:
        handle.seek(0)
    while True:
        position = handle.tell()
        byte = handle.read(1)
        if byte not in _WHITESPACE or not byte:
            handle.seek(position)
            return byte


def _refuse_non_array(handle: BinaryIO) -> None:
    """Not an array: say whether it is JSON at all (streamed, as big files may be anything)."""
    try:
        for _event in ijson.parse(handle):
            pass
    except ijson.JSONError as error:
        raise FormatError(_json_problem(error)) from None
    raise FormatError(RowProblem(0, None, "the JSON must be an array of items", "not_json"))


def _json_problem(error: Exception) -> RowProblem:
    message = error.args[0] if error.args else str(error)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    first_line = str(message).strip().splitlines()[0] if str(message).strip() else "unreadable"
    if "UTF8" in first_line:
        return RowProblem(0, None, f"not UTF-8 text: {first_line}", "unreadable_text")
    return RowProblem(0, None, f"not valid JSON: {first_line}", "not_json")


class _SeenIds:
    """The ids read so far: a bitmap for the usual small non-negative ids (a bit each, so a
    pool's 500,000 ids take 64 KB), a set for any others."""

    _BITMAP_LIMIT = 1 << 27  # ids below this take a bit; the bitmap grows to 16 MB at most

    def __init__(self) -> None:
        self._bits = bytearray()
        self._others: set[int] = set()

    def seen(self, index: int) -> bool:
        if 0 <= index < self._BITMAP_LIMIT:
            byte = index >> 3
            return byte < len(self._bits) and bool(self._bits[byte] >> (index & 7) & 1)
        return index in self._others

    def add(self, index: int) -> None:
        if 0 <= index < self._BITMAP_LIMIT:
            byte = index >> 3
            if byte >= len(self._bits):
                self._bits.extend(bytes(max(byte + 1 - len(self._bits), len(self._bits))))
            self._bits[byte] |= 1 << (index & 7)
        else:
            self._others.add(index)


def _options(value: Any) -> tuple[dict[str, str], str | None]:
    if not isinstance(value, list) or not value:
        return {}, "options must be a non-empty list"
    if len(value) > len(string.ascii_uppercase):
        return {}, f"{len(value)} options, at most 26 can be lettered"
    if any(not isinstance(option, str | int | float) and option is not None for option in value):
        return {}, "options must be texts"
    return {
        letter: _text(option)
        for letter, option in zip(string.ascii_uppercase[: len(value)], value, strict=True)
    }, None


def _index(value: Any, number: int) -> int:
    if _id_is_index(value):
        return int(value)
    return number


def _id_is_index(value: Any) -> bool:
    """Whether an id is an integer that the index column gives back exactly ("7", not "007")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    return (
        isinstance(value, str) and value.isascii() and value.isdigit() and str(int(value)) == value
    )


def _clashes(key: str) -> str:
    """Why an extra key cannot be a column of its own ('' when it can)."""
    if not key.strip():
        return "a key with no name cannot become a column"
    if key in ("index", "image") or (len(key) == 1 and key in string.ascii_uppercase):
        return f"key {key!r} clashes with VLMEvalKit's column of that name"
    return ""


def _extra(item: dict[str, Any], extra_columns: list[str]) -> dict[str, str]:
    extra = {field: _text(item.get(field)) for field in (*TAXONOMY_FIELDS, "gt")}
    for column in extra_columns:
        extra[column] = _cell(item.get(column))
    return extra


def _cell(value: Any) -> str:
    """An extra key's value as a TSV cell: text as it is, other JSON values as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _text(value: Any) -> str:
    return "" if value is None else str(value)
