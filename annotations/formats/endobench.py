"""EndoBench: its TSV (a VLMEvalKit MCQ TSV with fixed columns) and its JSON release."""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotations.formats.cells import ReadLimits, metadata_warnings
from annotations.formats.errors import FormatError, RowProblem, RowWarning
from annotations.formats.jsontext import NUL_REASON, first_nul
from annotations.formats.paths import UnsafePathError, resolve_image_path
from annotations.formats.vlmeval import McqRow, McqTsvReader, answer_problem
from annotations.imaging.images import ImageError, ImageInfo, prepare_image

TAXONOMY_FIELDS = ("category", "task", "subtask", "scene", "dataset")
ENDOBENCH_TSV_COLUMNS = (
    "index",
    "question",
    *TAXONOMY_FIELDS,
    "answer",
    "gt",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
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
    folder; paths leaving those folders are refused. The JSON itself (text and
    paths only) is loaded whole; the images are read one by one while iterating.
    Rows carry the original `image_path` in `image_paths` and the image bytes in
    `images`. Bad items land in `problems`, as with `McqTsvReader`.

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
        self._items: list[Any] | None = None

    @property
    def columns(self) -> list[str]:
        """The VLMEvalKit TSV header of the items (EndoBench's TSV order, extra keys last)."""
        core = ["index", "image", "image_path", "question"]
        if any(isinstance(item, dict) and "hint" in item for item in self._loaded()):
            core.append("hint")
        core += ["category", "task", "subtask", "scene", "answer", "dataset", "gt"]
        core += self.option_letters
        return core + self._extra_columns()

    def _extra_columns(self) -> list[str]:
        objects = [item for item in self._loaded() if isinstance(item, dict)]
        extra = dict.fromkeys(key for item in objects for key in item if key not in _MAPPED_KEYS)
        keep_id = any("id" in item and not _id_is_index(item["id"]) for item in objects)
        return [key for key in extra if not _clashes(key)] + ["id"] * keep_id

    def close(self) -> None:
        """Nothing to release (images are read and closed one by one); for API parity."""

    def __enter__(self) -> EndoBenchJsonReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def option_letters(self) -> list[str]:
        """Letters A–F as in EndoBench's TSV, or A.. up to the longest option list if longer."""
        longest = max(
            (
                len(item["options"])
                for item in self._loaded()
                if isinstance(item, dict) and isinstance(item.get("options"), list)
            ),
            default=0,
        )
        return list(string.ascii_uppercase[: min(max(longest, TSV_OPTION_COLUMNS), 26)])

    def fraction_read(self) -> float:
        """How many of the file's items were read, from 0 to 1 (for a progress bar)."""
        items = self._items
        return self._done / len(items) if items else 0.0

    def __iter__(self) -> Iterator[McqRow]:
        self.problems = []
        letters, extra_columns = self.option_letters, self._extra_columns()
        first_row_of_index: dict[int, int] = {}
        for number, item in enumerate(self._loaded(), start=1):
            self._done = number
            row, problems = self._parse_item(number, item, letters, extra_columns)
            if row is not None and row.index in first_row_of_index:
                first = first_row_of_index[row.index]
                problems.append(
                    RowProblem(
                        number, "id", f"duplicate id {row.index} (first used in row {first})"
                    )
                )
            elif row is not None:
                first_row_of_index[row.index] = number
            if problems or row is None:
                self.problems.extend(problems)
                continue
            yield row

    def _loaded(self) -> list[Any]:
        if self._items is None:
            self._items = _load_json_array(self.path)
        return self._items

    def _parse_item(
        self, number: int, item: Any, letters: list[str], extra_columns: list[str]
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
        image, info = self._read_image(number, image_path, problems)
        row = McqRow(
            row=number,
            index=_index(item.get("id"), number),
            images=[image] if image is not None else [],
            image_infos=[info] if info is not None else [],
            image_ref=None,
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


def _load_json_array(path: Path) -> list[Any]:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            items = json.load(handle)
    except UnicodeDecodeError as exc:
        raise FormatError(
            RowProblem(0, None, f"not UTF-8 text: {exc.reason}", "unreadable_text")
        ) from None
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise FormatError(RowProblem(0, None, reason, "not_json")) from None
    if not isinstance(items, list):
        raise FormatError(RowProblem(0, None, "the JSON must be an array of items", "not_json"))
    if not items:
        raise FormatError(RowProblem(0, None, "empty file: the array holds no item", "no_items"))
    return items


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
