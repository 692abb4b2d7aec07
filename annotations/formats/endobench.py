"""EndoBench: its TSV (a VLMEvalKit MCQ TSV with fixed columns) and its JSON release."""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from annotations.formats.cells import ReadLimits, metadata_warnings
from annotations.formats.errors import FormatError, RowProblem, RowWarning
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
IMAGES_FOLDER = "EndoBench-Images"


class EndoBenchTsvReader(McqTsvReader):
    """A VLMEvalKit MCQ TSV reader that also requires EndoBench's columns."""

    family_columns = ENDOBENCH_TSV_COLUMNS


def read_endobench_tsv(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    validate_images: bool = True,
    limits: ReadLimits | None = None,
) -> EndoBenchTsvReader:
    """Open an EndoBench TSV; iterate the result for `McqRow`s (see `McqTsvReader`)."""
    return EndoBenchTsvReader(source, validate_images=validate_images, limits=limits)


class EndoBenchJsonReader:
    """Read EndoBench's JSON array and its images from disk, one item at a time.

    Images are looked up next to the JSON file, then in its `EndoBench-Images/`
    folder; paths leaving those folders are refused. The JSON itself (text and
    paths only) is loaded whole; the images are read one by one while iterating.
    Rows carry the original `image_path` in `image_paths` and the image bytes in
    `images`. Bad items land in `problems`, as with `McqTsvReader`.
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
        """The item keys this reader understands (the JSON has no header)."""
        return list(JSON_KEYS)

    def close(self) -> None:
        """Nothing to release (images are read and closed one by one); for API parity."""

    def __enter__(self) -> EndoBenchJsonReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def option_letters(self) -> list[str]:
        """Letters A.. up to the longest option list in the file."""
        longest = max(
            (
                len(item["options"])
                for item in self._loaded()
                if isinstance(item, dict) and isinstance(item.get("options"), list)
            ),
            default=0,
        )
        return list(string.ascii_uppercase[: min(longest, 26)])

    def fraction_read(self) -> float:
        """How many of the file's items were read, from 0 to 1 (for a progress bar)."""
        items = self._items
        return self._done / len(items) if items else 0.0

    def __iter__(self) -> Iterator[McqRow]:
        self.problems = []
        first_row_of_index: dict[int, int] = {}
        for number, item in enumerate(self._loaded(), start=1):
            self._done = number
            row, problems = self._parse_item(number, item)
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

    def _parse_item(self, number: int, item: Any) -> tuple[McqRow | None, list[RowProblem]]:
        if not isinstance(item, dict):
            return None, [RowProblem(number, None, "item is not a JSON object")]
        problems = [
            RowProblem(number, key, "missing key") for key in _JSON_REQUIRED_KEYS if key not in item
        ]
        if problems:
            return None, problems
        options, option_problem = _options(item["options"])
        if option_problem:
            problems.append(RowProblem(number, "options", option_problem))
        question = _text(item["question"])
        if not question.strip():
            problems.append(RowProblem(number, "question", "empty question"))
        answer = _text(item["answer"]).strip()
        wrong_answer = answer_problem(answer, options)
        if wrong_answer:
            problems.append(RowProblem(number, "answer", wrong_answer))
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
            hint="",
            options=options,
            answer=answer,
            extra=_extra(item),
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
        raise FormatError(RowProblem(0, None, f"not UTF-8 text: {exc.reason}")) from None
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise FormatError(RowProblem(0, None, reason)) from None
    if not isinstance(items, list):
        raise FormatError(RowProblem(0, None, "the JSON must be an array of items"))
    if not items:
        raise FormatError(RowProblem(0, None, "empty file: the array holds no item"))
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
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return number


def _extra(item: dict[str, Any]) -> dict[str, str]:
    extra = {field: _text(item.get(field)) for field in (*TAXONOMY_FIELDS, "gt")}
    if "id" in item:
        extra["id"] = _text(item["id"])
    return extra


def _text(value: Any) -> str:
    return "" if value is None else str(value)
