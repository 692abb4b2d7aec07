from __future__ import annotations

import datetime
import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy
import pytest

from annotations.formats.jsonexport import (
    dumps_canonical,
    dumps_canonical_bytes,
    loads_strict,
    write_items_json,
)

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


def test_the_fast_encoder_writes_what_the_canonical_one_writes():
    value = {
        "b": [1, 2.5, -0.0, 1e16, 123456789.125, None, True, False],
        "a": {"z": 'é 中文 \u2028 \x1f " \\ \n\t', "y": {3, 1, 2}},
        "day": datetime.date(2026, 11, 30),
        "when": datetime.datetime(2026, 11, 30, 8, 15, 0, 123456, tzinfo=datetime.UTC),
        "id": uuid.UUID(int=5),
        "spacing": [numpy.float64(0.75), numpy.float64(1.25)],
        "": [],
    }
    assert dumps_canonical_bytes(value) == dumps_canonical(value).encode("utf-8")
    # The one difference in text: a small float's exponent, the same number to every reader.
    assert json.loads(dumps_canonical_bytes({"x": 1e-05})) == {"x": 1e-05}


def test_strict_loading_refuses_what_json_itself_refuses():
    assert loads_strict('{"score": 0.5, "tags": ["a"]}') == {"score": 0.5, "tags": ["a"]}
    for text in ('{"score": NaN}', "[Infinity]", "[-Infinity]", "{'a': 1}", ""):
        with pytest.raises(ValueError):
            loads_strict(text)
