from __future__ import annotations

import base64
import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from annotations.formats.vlmeval import McqRow, McqTsvReader, write_mcq_tsv
from tests.formats.builders import MCQ_HEADER, b64, jpeg_bytes, mcq_row, png_bytes, tsv_text

COLUMNS = ["index", "image", "question", "A", "B", "C", "D", "answer", "category", "split"]


def row_to_cells(row: McqRow) -> dict[str, object]:
    image: object = (
        row.images if len(row.images) > 1 else (row.images[0] if row.images else row.image_ref)
    )
    return {
        "index": row.index,
        "image": image,
        "question": row.question,
        **row.options,
        "answer": row.answer,
        **row.extra,
    }


def read(data: bytes) -> list[McqRow]:
    reader = McqTsvReader(io.BytesIO(data))
    rows = list(reader)
    assert reader.problems == []
    return rows


def written(columns: list[str], rows: list[dict[str, object]]) -> bytes:
    out = io.BytesIO()
    write_mcq_tsv(out, columns, rows)
    return out.getvalue()


def sample_rows() -> list[dict[str, object]]:
    return [
        {
            "index": 1,
            "image": jpeg_bytes(),
            "question": 'Is it "red"?\tTab\nand newline',
            "A": "yes",
            "B": "no",
            "answer": "A",
            "category": "color",
            "split": "test",
        },
        {
            "index": 2,
            "image": 1,
            "question": "Same frame, other question",
            "A": "x",
            "B": "y",
            "C": "z",
            "D": None,
            "answer": "C",
            "category": "",
            "split": "test",
        },
        {
            "index": 3,
            "image": [jpeg_bytes("green"), png_bytes()],
            "question": "Two images",
            "A": "first",
            "B": "second",
            "answer": "B",
            "category": "pair",
        },
    ]


def test_a_written_file_reads_back_to_the_same_rows():
    rows = read(written(COLUMNS, sample_rows()))
    rewritten = read(written(COLUMNS, [row_to_cells(row) for row in rows]))
    assert [dataclasses.asdict(row) for row in rewritten] == [
        dataclasses.asdict(row) for row in rows
    ]
    assert rows[0].question == 'Is it "red"?\tTab\nand newline'
    assert rows[1].image_ref == 1


def test_reading_then_writing_an_unquoted_file_keeps_every_value():
    source = tsv_text(
        [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes())), mcq_row(2, "1", answer="C")], quote_all=False
    )
    rows = read(source.encode())
    again = read(written(MCQ_HEADER, [row_to_cells(row) for row in rows]))
    assert [dataclasses.asdict(row) for row in again] == [dataclasses.asdict(row) for row in rows]


def test_pandas_reads_the_written_file_to_the_same_values(tmp_path: Path):
    path = tmp_path / "release.tsv"
    with open(path, "wb") as out:
        write_mcq_tsv(out, COLUMNS, sample_rows())
    frame = pd.read_csv(path, sep="\t")
    assert list(frame.columns) == COLUMNS
    assert frame["index"].tolist() == [1, 2, 3]
    assert frame.loc[0, "question"] == 'Is it "red"?\tTab\nand newline'
    assert base64.b64decode(frame.loc[0, "image"]) == jpeg_bytes()
    assert str(frame.loc[1, "image"]) == "1"
    assert frame.loc[2, "image"] == repr([b64(jpeg_bytes("green")), b64(png_bytes())])
    assert frame["answer"].tolist() == ["A", "C", "B"]
    assert (
        pd.isna(frame.loc[0, "C"]) and pd.isna(frame.loc[1, "D"]) and pd.isna(frame.loc[2, "split"])
    )


def test_empty_options_are_empty_cells_never_none_or_nan():
    data = written(
        COLUMNS, [{**sample_rows()[1], "D": None, "C": float("nan"), "answer": "A", "category": ""}]
    )
    text = data.decode()
    assert "None" not in text and "nan" not in text
    assert text.splitlines()[1].split("\t")[5:7] == ['""', '""']


def test_every_cell_is_quoted():
    lines = (
        written(["index", "question", "answer"], [{"index": 4, "question": "q", "answer": "A"}])
        .decode()
        .splitlines()
    )
    assert lines == ['"index"\t"question"\t"answer"', '"4"\t"q"\t"A"']


def test_jpeg_bytes_pass_through_byte_for_byte():
    source = jpeg_bytes("purple", size=(40, 30))
    [row] = read(
        written(COLUMNS, [{"index": 1, "image": source, "question": "q", "A": "a", "answer": "A"}])
    )
    assert row.images == [source]


def test_a_list_cell_round_trips_with_its_images_in_order():
    images = [jpeg_bytes("red"), jpeg_bytes("blue"), png_bytes("white")]
    [row] = read(
        written(COLUMNS, [{"index": 9, "image": images, "question": "q", "A": "a", "answer": "A"}])
    )
    assert row.images == images


def test_it_refuses_values_for_columns_not_in_the_header():
    with pytest.raises(ValueError, match="unknown columns \\['typo'\\]"):
        written(COLUMNS, [{"index": 1, "typo": "x"}])


def test_it_refuses_duplicate_header_columns():
    with pytest.raises(ValueError, match="duplicate"):
        written(["index", "index"], [])


def test_it_writes_rows_as_they_come_without_building_the_file_in_memory():
    out = io.BytesIO()
    sizes_seen: list[int] = []

    def rows() -> Iterator[dict[str, object]]:
        for index in range(1, 4):
            sizes_seen.append(out.tell())
            yield {"index": index, "image": jpeg_bytes(), "question": "q", "A": "a", "answer": "A"}

    write_mcq_tsv(out, COLUMNS, rows())
    assert sizes_seen[0] < sizes_seen[1] < sizes_seen[2] < out.tell()
