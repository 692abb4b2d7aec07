from __future__ import annotations

import datetime
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from annotations.formats.jsonexport import write_items_json

HEADER = {
    "name": "endobench-v1",
    "version": 3,
    "taxonomy": {"scene": ["Colonoscopy", "Gastroscopy"]},
}
ITEMS = [
    {"index": 1, "question": "Qué es? «polyp»", "options": ["a", "b"], "answer": "A"},
    {
        "index": 2,
        "question": "Second",
        "options": ["x", None],
        "answer": "A",
        "created": datetime.date(2025, 1, 2),
    },
]


def as_bytes(header: dict, items: list[dict]) -> bytes:
    out = io.BytesIO()
    write_items_json(out, header, items)
    return out.getvalue()


def test_it_writes_valid_json_with_the_header_and_items():
    document = json.loads(as_bytes(HEADER, ITEMS))
    assert document == {**HEADER, "items": [ITEMS[0], {**ITEMS[1], "created": "2025-01-02"}]}


def test_the_same_data_gives_byte_identical_files_whatever_the_key_order():
    shuffled_header = dict(reversed(list(HEADER.items())))
    shuffled_items = [dict(reversed(list(item.items()))) for item in ITEMS]
    assert as_bytes(HEADER, ITEMS) == as_bytes(shuffled_header, shuffled_items)


def test_it_keeps_non_ascii_text_readable_and_one_item_per_line():
    data = as_bytes(HEADER, ITEMS)
    assert "«polyp»".encode() in data
    assert data.count(b"\n") == len(ITEMS) + 2


def test_text_and_binary_outputs_are_identical(tmp_path: Path):
    with open(tmp_path / "a.json", "w", encoding="utf-8") as text_file:
        write_items_json(text_file, HEADER, ITEMS)
    assert (tmp_path / "a.json").read_bytes() == as_bytes(HEADER, ITEMS)


def test_it_writes_an_empty_release():
    assert json.loads(as_bytes({}, [])) == {"items": []}


def test_it_streams_items_one_by_one():
    out = io.BytesIO()
    sizes: list[int] = []

    def items() -> Iterator[dict]:
        for index in range(3):
            sizes.append(out.tell())
            yield {"index": index}

    write_items_json(out, {"name": "x"}, items())
    assert sizes[0] < sizes[1] < sizes[2]


def test_it_refuses_nan_and_an_items_key_in_the_header():
    with pytest.raises(ValueError):
        as_bytes({}, [{"score": float("nan")}])
    with pytest.raises(ValueError, match="items"):
        as_bytes({"items": 1}, [])
