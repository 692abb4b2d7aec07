from __future__ import annotations

import io
import string
from pathlib import Path

import pandas as pd
import pytest

from annotations.formats.errors import FormatError, RowProblem
from annotations.formats.vlmeval import McqRow, McqTsvReader
from tests.formats.builders import (
    MCQ_HEADER,
    b64,
    jpeg_bytes,
    mcq_row,
    png_bytes,
    png_claiming_size,
    quoted,
    tsv_text,
    write_tsv,
)


def read_all(source: Path | io.BytesIO, **options: bool) -> tuple[list[McqRow], list[RowProblem]]:
    reader = McqTsvReader(source, **options)
    rows = list(reader)
    return rows, reader.problems


def read_bytes(data: bytes, **options: bool) -> tuple[list[McqRow], list[RowProblem]]:
    return read_all(io.BytesIO(data), **options)


def problems_of(
    rows: list[list[str]], header: list[str] = MCQ_HEADER
) -> list[tuple[int, str | None]]:
    _, problems = read_bytes(tsv_text([header, *rows]).encode())
    return [(problem.row, problem.column) for problem in problems]


def reason_of(rows: list[list[str]], header: list[str] = MCQ_HEADER) -> str:
    _, problems = read_bytes(tsv_text([header, *rows]).encode())
    assert len(problems) == 1, problems
    return problems[0].reason


def whole_file_problem(data: bytes) -> RowProblem:
    with pytest.raises(FormatError) as caught:
        read_bytes(data)
    assert caught.value.problems
    return caught.value.problems[0]


@pytest.mark.parametrize("quote_all", [True, False])
def test_it_reads_quoted_and_unquoted_files_alike(tmp_path: Path, quote_all: bool):
    jpeg = jpeg_bytes()
    path = write_tsv(
        tmp_path / "b.tsv", [MCQ_HEADER, mcq_row(7, b64(jpeg), answer="B")], quote_all=quote_all
    )
    rows, problems = read_all(path)
    assert problems == []
    [row] = rows
    assert (row.row, row.index, row.images, row.image_ref) == (1, 7, [jpeg], None)
    assert row.options == {"A": "polyp", "B": "ulcer", "C": "bleeding", "D": ""}
    assert (row.answer, row.question, row.hint, row.extra) == (
        "B",
        "What is shown?",
        "",
        {"category": "lesion"},
    )


def test_it_matches_pandas_cell_by_cell_on_a_tricky_file(tmp_path: Path):
    image = b64(png_bytes())
    header = ["index", "image", "question", "hint", "A", "B", "answer", "category", "l2-category"]
    lines = [
        "\t".join(quoted(cell) for cell in header),
        "\t".join(
            quoted(cell)
            for cell in [
                "1",
                image,
                'Tab\there, "quotes" and\nnewline',
                "",
                "α",
                "β",
                "A",
                "c",
                "x",
            ]
        ),
        "",  # pandas skips blank lines
        "\t".join(
            ["2", image, 'unquoted with "inner" quote', "hint text", "yes", "", "A", "c", "None"]
        ),
        "\t".join(
            ["3", quoted(image), quoted("mixed\r\nCRLF inside"), "", "a", "b", "B", "", "  spaced "]
        ),
    ]
    path = tmp_path / "tricky.tsv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))

    rows, problems = read_all(path)
    expected = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)

    assert problems == []
    assert len(rows) == len(expected) == 3
    for row, (_, frame_row) in zip(rows, expected.iterrows(), strict=True):
        ours = {
            "index": str(row.index),
            "image": b64(row.images[0]),
            "question": row.question,
            "hint": row.hint,
            **row.options,
            "answer": row.answer,
            **row.extra,
        }
        assert ours == frame_row.to_dict()


def test_it_keeps_none_like_text_raw_where_pandas_would_see_nan(tmp_path: Path):
    row = mcq_row(1, b64(jpeg_bytes()))
    row[-1] = "NA"
    [read], _ = read_all(write_tsv(tmp_path / "na.tsv", [MCQ_HEADER, row]))
    assert read.extra["category"] == "NA"


def test_it_resolves_image_reuse_references():
    image = b64(jpeg_bytes())
    rows, problems = read_bytes(
        tsv_text([MCQ_HEADER, mcq_row(10, image), mcq_row(11, "10")]).encode()
    )
    assert problems == []
    assert (rows[1].images, rows[1].image_ref) == ([], 10)


def test_it_accepts_a_reference_to_a_later_row():
    rows, problems = read_bytes(
        tsv_text([MCQ_HEADER, mcq_row(1, "2"), mcq_row(2, b64(jpeg_bytes()))]).encode()
    )
    assert problems == [] and rows[0].image_ref == 2


def test_it_reads_a_list_cell_with_two_images_and_parallel_paths():
    first, second = jpeg_bytes("red"), png_bytes("green")
    header = [*MCQ_HEADER, "image_path"]
    cell = repr([b64(first), b64(second)])
    rows, problems = read_bytes(
        tsv_text([header, [*mcq_row(1, cell), "['a.jpg', 'b.png']"]]).encode()
    )
    assert problems == []
    assert rows[0].images == [first, second]
    assert rows[0].image_paths == ["a.jpg", "b.png"]


def test_it_reads_options_a_to_z_with_empty_unused_ones():
    letters = list(string.ascii_uppercase)
    header = ["index", "image", "question", *letters, "answer"]
    options = ["first", "second"] + [""] * 24
    reader = McqTsvReader(
        io.BytesIO(tsv_text([header, ["1", b64(jpeg_bytes()), "q", *options, "B"]]).encode())
    )
    [row] = list(reader)
    assert reader.option_letters == letters
    assert list(row.options) == letters
    assert row.options["A"] == "first" and row.options["Z"] == ""


def test_it_reads_a_path_only_file_without_images():
    header = ["index", "image_path", "question", "A", "B", "answer"]
    rows, problems = read_bytes(
        tsv_text([header, ["1", "images/1.jpg", "q", "a", "b", "A"]]).encode()
    )
    assert problems == []
    assert (rows[0].images, rows[0].image_ref, rows[0].image_paths) == ([], None, ["images/1.jpg"])


def test_it_reports_an_empty_image_path_in_a_path_only_file():
    header = ["index", "image_path", "question", "A", "B", "answer"]
    assert problems_of([["1", "", "q", "a", "b", "A"]], header) == [(1, "image_path")]


def test_it_exposes_columns_before_iteration_and_accepts_a_bom():
    data = "\ufeff".encode() + tsv_text([MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))]).encode()
    reader = McqTsvReader(io.BytesIO(data))
    assert reader.columns == MCQ_HEADER
    assert [row.index for row in reader] == [1]


def test_it_leaves_a_callers_stream_open_and_refuses_a_second_pass():
    stream = io.BytesIO(tsv_text([MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))]).encode())
    reader = McqTsvReader(stream)
    list(reader)
    assert not stream.closed
    with pytest.raises(RuntimeError):
        iter(reader)


def test_it_rejects_broken_base64():
    assert problems_of([mcq_row(1, "iVBORw0K*broken*" + "A" * 80)]) == [(1, "image")]
    assert "broken base64: invalid character '*'" in reason_of([mcq_row(1, "iVBORw0K*" + "A" * 80)])


def test_it_rejects_base64_with_bad_padding():
    assert "broken base64" in reason_of([mcq_row(1, b64(jpeg_bytes())[:-3] + "=")])


def test_it_rejects_a_data_url_prefix():
    assert "data: URL" in reason_of([mcq_row(1, "data:image/jpeg;base64," + b64(jpeg_bytes()))])


def test_it_accepts_base64_broken_by_line_wraps():
    encoded = b64(jpeg_bytes())
    wrapped = "\n".join(encoded[start : start + 76] for start in range(0, len(encoded), 76))
    rows, problems = read_bytes(tsv_text([MCQ_HEADER, mcq_row(1, wrapped)]).encode())
    assert problems == [] and rows[0].images == [jpeg_bytes()]


def test_it_rejects_base64_of_bytes_that_are_not_an_image():
    reason = reason_of([mcq_row(1, b64(b"just some text, not pixels " * 4))])
    assert reason.startswith("base64 does not hold a usable image: not an image")


def test_it_skips_image_decoding_when_asked_but_still_checks_base64():
    not_image = b64(b"just some text, not pixels " * 4)
    rows, problems = read_bytes(
        tsv_text([MCQ_HEADER, mcq_row(1, not_image)]).encode(), validate_images=False
    )
    assert problems == [] and rows[0].images == [b"just some text, not pixels " * 4]
    _, problems = read_bytes(
        tsv_text([MCQ_HEADER, mcq_row(1, "*" * 80)]).encode(), validate_images=False
    )
    assert [problem.column for problem in problems] == ["image"]


def test_it_rejects_a_decompression_bomb():
    assert "decompression bomb" in reason_of([mcq_row(1, b64(png_claiming_size(100_000, 100_000)))])


def test_it_rejects_an_index_that_is_not_an_integer():
    image = b64(jpeg_bytes())
    assert problems_of([mcq_row(1, image), ["x1", *mcq_row(2, image)[1:]]]) == [(2, "index")]
    assert "not an integer: '2.5'" in reason_of([["2.5", *mcq_row(2, image)[1:]]])


def test_it_rejects_a_duplicate_index():
    image = b64(jpeg_bytes())
    assert "duplicate index 5 (first used in row 1)" in reason_of(
        [mcq_row(5, image), mcq_row(5, image)]
    )


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("E", "not an option letter"),
        ("D", "empty option"),
        ("", "empty answer"),
        ("a", "not an option"),
    ],
)
def test_it_rejects_an_answer_that_is_not_a_non_empty_option(answer: str, expected: str):
    assert expected in reason_of([mcq_row(1, b64(jpeg_bytes()), answer=answer)])


def test_it_rejects_an_empty_question():
    assert problems_of([mcq_row(1, b64(jpeg_bytes()), question="  ")]) == [(1, "question")]


def test_it_rejects_rows_with_the_wrong_number_of_cells():
    image = b64(jpeg_bytes())
    rows = [mcq_row(1, image)[:-1], [*mcq_row(2, image), "extra"], mcq_row(3, image)]
    assert problems_of(rows) == [(1, None), (2, None)]
    assert "expected 9 cells as in the header, got 8" in reason_of([mcq_row(1, image)[:-1]])


def test_it_reports_a_reference_to_a_missing_row_at_the_referring_row():
    image = b64(jpeg_bytes())
    _, problems = read_bytes(tsv_text([MCQ_HEADER, mcq_row(1, "99"), mcq_row(2, image)]).encode())
    assert problems == [
        RowProblem(1, "image", "reuses the image of index 99, but no row has that index")
    ]


def test_it_reports_a_reference_to_a_row_without_an_image_of_its_own():
    image = b64(jpeg_bytes())
    rows = [mcq_row(1, image), mcq_row(2, "1"), mcq_row(3, "2")]
    _, problems = read_bytes(tsv_text([MCQ_HEADER, *rows]).encode())
    assert [(problem.row, problem.column) for problem in problems] == [(3, "image")]
    assert "holds no usable image" in problems[0].reason


def test_it_rejects_an_image_reference_that_is_not_an_integer():
    assert "is not an integer" in reason_of([mcq_row(1, "img-1")])


def test_it_rejects_an_empty_image_cell():
    assert "empty image cell" in reason_of([mcq_row(1, "")])


@pytest.mark.parametrize(
    "cell",
    ["['" + "A" * 70 + "'", "[" + "1, " * 30 + "2]", "['" + "A" * 70 + "', __import__('os')]"],
)
def test_it_rejects_a_malformed_list_literal(cell: str):
    assert "malformed list literal" in reason_of([mcq_row(1, cell)])


def test_it_names_the_broken_image_inside_a_list():
    cell = repr([b64(jpeg_bytes()), "*" * 80])
    assert reason_of([mcq_row(1, cell)]).startswith("image 2 of 2: broken base64")


def test_it_reports_every_bad_row_with_row_and_column_and_yields_the_good_ones():
    image = b64(jpeg_bytes())
    rows = [
        mcq_row(1, image),
        mcq_row(2, "not*base64*" * 10, answer="Q"),
        mcq_row(3, image),
        mcq_row(3, image, question=""),
        mcq_row(5, "42"),
        ["6", image],
        mcq_row(7, image),
    ]
    reader = McqTsvReader(io.BytesIO(tsv_text([MCQ_HEADER, *rows]).encode()))
    good = [row.index for row in reader]
    assert good == [1, 3, 5, 7]
    assert [(problem.row, problem.column) for problem in reader.problems] == [
        (2, "answer"),
        (2, "image"),
        (4, "index"),
        (4, "question"),
        (5, "image"),
        (6, None),
    ]
    assert str(reader.problems[1]).startswith("row 2, column 'image': broken base64")


def test_it_raises_on_an_empty_file():
    assert "empty file" in whole_file_problem(b"").reason
    assert "empty file" in whole_file_problem(b"\n\r\n\n").reason


@pytest.mark.parametrize("missing", ["index", "question", "answer"])
def test_it_raises_on_a_missing_required_column(missing: str):
    header = [name for name in MCQ_HEADER if name != missing]
    with pytest.raises(FormatError) as caught:
        read_bytes(tsv_text([header]).encode())
    assert caught.value.problems == [RowProblem(0, missing, "missing required column")]


def test_it_raises_when_there_is_neither_image_nor_image_path():
    header = [name for name in MCQ_HEADER if name != "image"]
    problem = whole_file_problem(tsv_text([header]).encode())
    assert (problem.row, problem.column) == (0, "image")


def test_it_raises_on_duplicate_or_empty_column_names():
    with pytest.raises(FormatError) as caught:
        read_bytes(tsv_text([[*MCQ_HEADER, "A", ""]]).encode())
    assert [problem.column for problem in caught.value.problems] == ["A", None]


def test_it_raises_on_binary_garbage():
    assert "binary data (NUL byte) on line 1" in whole_file_problem(b"\x00\x01\x02garbage").reason
    header = tsv_text([MCQ_HEADER]).encode()
    problem = whole_file_problem(header + b"1\t\x00\x01\x02garbage\x00\n")
    assert (problem.row, problem.reason) == (1, "binary data (NUL byte) on line 2: not a TSV file")


def test_it_raises_on_an_image_file_uploaded_as_tsv():
    assert "not UTF-8" in whole_file_problem(png_bytes()).reason


def test_it_raises_on_non_utf8_text_with_the_row_where_it_happens():
    data = tsv_text([MCQ_HEADER, mcq_row(1, b64(jpeg_bytes())), mcq_row(2, b64(jpeg_bytes()))])
    latin1 = data.encode() + "3\tx\tcaf\u00e9\n".encode("latin-1")
    with pytest.raises(FormatError) as caught:
        read_bytes(latin1)
    [problem] = caught.value.problems
    assert problem.row == 3 and "not UTF-8 text" in problem.reason


def test_it_raises_on_a_file_truncated_inside_a_quoted_cell():
    data = tsv_text(
        [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes())), mcq_row(2, b64(jpeg_bytes()))]
    ).encode()
    cut = data[: len(data) - 500]
    reader = McqTsvReader(io.BytesIO(cut))
    with pytest.raises(FormatError) as caught:
        list(reader)
    assert caught.value.problems == [
        RowProblem(2, None, "truncated file: a quoted cell is never closed")
    ]


def test_it_accepts_a_last_line_without_newline():
    data = tsv_text([MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))]).rstrip("\n").encode()
    rows, problems = read_bytes(data)
    assert problems == [] and rows[0].extra == {"category": "lesion"}


TRICKY_LINES = [
    "a\tb\t\n",
    "\n",
    '""\n',
    '"a"\t"b"\n',
    '"a\tb"\t"c"\r\n',
    '"a""b"\t"c"\n',
    'a\t"b"\n',
    '"a"x\t"b"\n',
    '"a"\t"b"x\n',
    '"1"\t"line one\nline two"\n',
    '"1"\t"ends with a quote"""\n',
    '"x"\t""\t"y"\n',
    "last line without newline",
]


@pytest.mark.parametrize("line", TRICKY_LINES)
def test_the_fast_split_reads_every_line_as_the_csv_module_does(line):
    import csv as csv_module

    from annotations.formats.records import read_records

    text = "h1\th2\n" + line
    expected = [row for row in csv_module.reader(io.StringIO(text), delimiter="\t") if row]
    got = [cells for _, cells in read_records(io.BytesIO(text.encode()))]
    assert got == expected
