from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from annotations.formats.endobench import (
    ENDOBENCH_TSV_COLUMNS,
    EndoBenchJsonReader,
    EndoBenchTsvReader,
)
from annotations.formats.errors import FormatError
from tests.formats.builders import b64, jpeg_bytes, tsv_text

TSV_HEADER = [
    "index", "image", "image_path", "question", "category", "task", "subtask", "scene",
    "answer", "dataset", "gt", "A", "B", "C", "D", "E", "F",
]  # fmt: skip


def tsv_row(index: int, image: str) -> list[str]:
    return [
        str(index), image, f"frames/{index}.jpg", "Which lesion?", "Lesion", "Classification",
        "Polyp type", "Colonoscopy", "B", "Kvasir", "adenoma", "hyperplastic", "adenoma", "", "", "", "",
    ]  # fmt: skip


def json_item(number: int, image_path: str, **changes: Any) -> dict[str, Any]:
    item = {
        "id": number,
        "question": f"Question {number}?",
        "options": ["bleeding", "polyp", "normal"],
        "answer": "B",
        "gt": "polyp",
        "category": "Lesion",
        "task": "Detection",
        "subtask": "Polyp",
        "scene": "Colonoscopy",
        "dataset": "CVC-ClinicDB",
        "image_path": image_path,
    }
    return {**item, **changes}


def write_json(folder: Path, items: list[Any]) -> Path:
    path = folder / "EndoBench.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def read_json(path: Path) -> tuple[list, list]:
    reader = EndoBenchJsonReader(path)
    rows = list(reader)
    return rows, reader.problems


def test_the_tsv_reader_carries_the_taxonomy_in_extra():
    reader = EndoBenchTsvReader(
        io.BytesIO(tsv_text([TSV_HEADER, tsv_row(1, b64(jpeg_bytes()))]).encode())
    )
    [row] = list(reader)
    assert reader.problems == []
    assert row.extra == {
        "category": "Lesion", "task": "Classification", "subtask": "Polyp type", "scene": "Colonoscopy",
        "dataset": "Kvasir", "gt": "adenoma",
    }  # fmt: skip
    assert row.options == {"A": "hyperplastic", "B": "adenoma", "C": "", "D": "", "E": "", "F": ""}
    assert row.image_paths == ["frames/1.jpg"]


@pytest.mark.parametrize("missing", ["scene", "dataset", "gt", "B", "subtask"])
def test_the_tsv_reader_requires_endobench_columns(missing: str):
    header = [name for name in TSV_HEADER if name != missing]
    with pytest.raises(FormatError) as caught:
        list(EndoBenchTsvReader(io.BytesIO(tsv_text([header]).encode())))
    assert [problem.column for problem in caught.value.problems] == [missing]
    assert missing in ENDOBENCH_TSV_COLUMNS


def test_a_tsv_of_four_options_reads_as_vlmevalkit_reads_it():
    """Options A–D only (no E, F): the same file imports as VLMEvalKit; it is EndoBench too."""
    header = TSV_HEADER[:-2]
    row = tsv_row(1, b64(jpeg_bytes()))[:-2]
    reader = EndoBenchTsvReader(io.BytesIO(tsv_text([header, row]).encode()))
    [read] = list(reader)
    assert reader.problems == []
    assert read.options == {"A": "hyperplastic", "B": "adenoma", "C": "", "D": ""}
    assert read.answer == "B"


def test_the_json_reader_finds_images_in_the_endobench_images_folder(tmp_path: Path):
    (tmp_path / "EndoBench-Images" / "cvc").mkdir(parents=True)
    frame = jpeg_bytes("orange")
    (tmp_path / "EndoBench-Images" / "cvc" / "001.jpg").write_bytes(frame)
    (tmp_path / "beside.jpg").write_bytes(jpeg_bytes("blue"))
    path = write_json(tmp_path, [json_item(5, "cvc/001.jpg"), json_item(6, "beside.jpg")])

    rows, problems = read_json(path)

    assert problems == []
    assert [row.index for row in rows] == [5, 6]
    assert rows[0].images == [frame] and rows[0].image_paths == ["cvc/001.jpg"]
    assert rows[1].images == [jpeg_bytes("blue")]
    # Every option column of the header (A–F as in EndoBench's TSV), '' when empty.
    assert rows[0].options == {"A": "bleeding", "B": "polyp", "C": "normal"} | dict.fromkeys(
        "DEF", ""
    )
    assert rows[0].answer == "B"
    assert rows[0].extra == {
        "category": "Lesion", "task": "Detection", "subtask": "Polyp", "scene": "Colonoscopy",
        "dataset": "CVC-ClinicDB", "gt": "polyp",
    }  # fmt: skip


def test_the_json_maps_to_the_endobench_tsv_header_with_extra_keys_as_columns(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    items = [
        json_item(1, "a.jpg", source_video="v12", frame_no=40),
        json_item(2, "a.jpg", options=["a", "b", "c", "d", "e"], bbox=[1, 2], reviewed=True),
    ]
    reader = EndoBenchJsonReader(write_json(tmp_path, items))
    rows = list(reader)

    assert reader.columns == [
        "index", "image", "image_path", "question", "category", "task", "subtask", "scene",
        "answer", "dataset", "gt", "A", "B", "C", "D", "E", "F", "source_video", "frame_no", "bbox",
        "reviewed",
    ]  # fmt: skip
    assert reader.columns[: len(TSV_HEADER)] == TSV_HEADER  # the TSV's header, extra keys after
    assert rows[0].extra["source_video"] == "v12" and rows[0].extra["frame_no"] == "40"
    assert rows[0].extra["bbox"] == "" and rows[1].extra["bbox"] == "[1, 2]"
    assert rows[1].extra["reviewed"] == "true"


def test_ids_that_are_not_indexes_are_kept_in_an_id_column(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    items = [
        json_item(0, "a.jpg", id="endo-7"),
        json_item(0, "a.jpg", id="007"),
        json_item(9, "a.jpg"),
    ]
    reader = EndoBenchJsonReader(write_json(tmp_path, items))
    rows = list(reader)

    assert reader.columns[-1] == "id"
    assert [(row.index, row.extra["id"]) for row in rows] == [(1, "endo-7"), (2, "007"), (9, "9")]


def test_a_hint_key_fills_the_hint_column(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    reader = EndoBenchJsonReader(write_json(tmp_path, [json_item(1, "a.jpg", hint="Look left")]))
    [row] = list(reader)
    assert row.hint == "Look left" and reader.columns[4] == "hint" and "id" not in reader.columns


def test_keys_that_cannot_be_columns_are_reported(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    items = [json_item(1, "a.jpg", A="x", index=3), json_item(2, "a.jpg", **{" ": 1})]
    reader = EndoBenchJsonReader(write_json(tmp_path, items))
    assert list(reader) == []
    assert [(p.row, p.column) for p in reader.problems] == [(1, "A"), (1, "index"), (2, None)]
    assert "clashes" in reader.problems[0].reason and "no name" in reader.problems[2].reason
    assert reader.columns == TSV_HEADER  # no column for them


def test_the_json_reader_numbers_items_without_integer_ids_by_position(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    rows, _ = read_json(
        write_json(tmp_path, [json_item(0, "a.jpg", id="x-1"), json_item(0, "a.jpg", id="17")])
    )
    assert [row.index for row in rows] == [1, 17]
    assert rows[0].extra["id"] == "x-1" and rows[1].extra["id"] == "17"


@pytest.mark.parametrize(
    "image_path",
    [
        "../secret.jpg",
        "/etc/passwd",
        "C:\\\\images\\\\a.jpg",
        "cvc/../../secret.jpg",
        "..\\\\secret.jpg",
    ],
)
def test_the_json_reader_refuses_paths_leaving_its_folders(tmp_path: Path, image_path: str):
    folder = tmp_path / "bench"
    folder.mkdir()
    (tmp_path / "secret.jpg").write_bytes(jpeg_bytes())
    rows, problems = read_json(write_json(folder, [json_item(1, image_path)]))
    assert rows == []
    assert [(problem.row, problem.column) for problem in problems] == [(1, "image_path")]
    assert "not allowed" in problems[0].reason or "climbs out" in problems[0].reason


def test_the_json_reader_refuses_a_symlink_out_of_its_folder(tmp_path: Path):
    folder = tmp_path / "bench"
    folder.mkdir()
    (tmp_path / "secret.jpg").write_bytes(jpeg_bytes())
    (folder / "link.jpg").symlink_to(tmp_path / "secret.jpg")
    _, problems = read_json(write_json(folder, [json_item(1, "link.jpg")]))
    assert "outside" in problems[0].reason


def test_the_json_reader_reports_every_bad_item(tmp_path: Path):
    (tmp_path / "a.jpg").write_bytes(jpeg_bytes())
    (tmp_path / "broken.jpg").write_bytes(b"not an image at all")
    items = [
        json_item(1, "a.jpg"),
        json_item(2, "missing.jpg"),
        json_item(3, "broken.jpg"),
        json_item(4, "a.jpg", answer="D"),
        "not an object",
        {"id": 6, "question": "q"},
        json_item(1, "a.jpg"),
        json_item(8, "a.jpg", options=[]),
    ]
    rows, problems = read_json(write_json(tmp_path, items))
    assert [row.index for row in rows] == [1]
    assert [(problem.row, problem.column) for problem in problems] == [
        (2, "image_path"), (3, "image_path"), (4, "answer"), (5, None),
        (6, "options"), (6, "answer"), (6, "image_path"), (7, "id"), (8, "options"), (8, "answer"),
    ]  # fmt: skip
    assert "not found" in problems[0].reason and "not an image" in problems[1].reason


@pytest.mark.parametrize(
    ("content", "reason"),
    [("{not json", "not valid JSON"), ('{"items": []}', "array"), ("[]", "empty file")],
)
def test_the_json_reader_raises_on_an_unusable_file(tmp_path: Path, content: str, reason: str):
    path = tmp_path / "EndoBench.json"
    path.write_text(content)
    with pytest.raises(FormatError, match=reason):
        list(EndoBenchJsonReader(path))
