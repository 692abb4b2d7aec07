"""Readers refuse oversized input before decoding it, and warn about what they imported as is."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from annotations.formats import EndoBenchJsonReader, FormatError, McqTsvReader, ReadLimits
from annotations.formats.errors import RowWarning
from tests.formats.builders import (
    MCQ_HEADER,
    b64,
    jpeg_bytes,
    jpeg_with_metadata,
    mcq_row,
    png_claiming_size,
    png_with_metadata,
    tsv_text,
)


class CountingStream(io.BytesIO):
    """A file whose reads are counted, to show how much of it a reader took in."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.bytes_read += len(chunk)
        return chunk

    def readline(self, size=-1):
        line = super().readline(size)
        self.bytes_read += len(line)
        return line


def read_all(text: str, **options) -> tuple[list, McqTsvReader]:
    reader = McqTsvReader(io.BytesIO(text.encode()), **options)
    return list(reader), reader


def test_an_image_cell_over_the_limit_is_refused_before_decoding_and_reading_goes_on():
    big = b64(jpeg_bytes(size=(300, 300)))
    rows, reader = read_all(
        tsv_text([MCQ_HEADER, mcq_row(1, big), mcq_row(2, b64(jpeg_bytes()))]),
        limits=ReadLimits(max_cell_bytes=len(big) - 1),
    )
    assert [row.index for row in rows] == [2]
    [problem] = reader.problems
    assert (problem.row, problem.column) == (1, "image")
    assert f"image cell of {len(big):,} characters is over the limit" in problem.reason


def test_a_line_past_the_limit_stops_the_reading_at_once():
    limit = 100_000
    huge = "A" * 5_000_000  # a 5 MB base64 cell, as in a hostile file
    data = tsv_text([MCQ_HEADER, mcq_row(1, b64(jpeg_bytes())), mcq_row(2, huge)]).encode()
    stream = CountingStream(data)
    reader = McqTsvReader(stream, limits=ReadLimits(max_cell_bytes=limit))

    with pytest.raises(FormatError) as caught:
        list(reader)

    [problem] = caught.value.problems
    assert (problem.row, problem.column) == (2, "image")
    assert "longer than" in problem.reason and "size limit" in problem.reason
    assert problem.code == "cell_too_large"  # reported as oversize, not as unreadable text
    # Only the limit (plus the room a row has beside it) was read of a 5 MB line.
    assert stream.bytes_read < limit + 1024**2 + 2_000
    assert stream.bytes_read < len(data) / 4


def test_an_image_that_decodes_to_too_many_pixels_is_an_error_checked_from_its_header():
    bomb = png_claiming_size(9400, 9400)  # under Pillow's own limit, over ours
    assert Image.MAX_IMAGE_PIXELS > 9400 * 9400
    rows, reader = read_all(
        tsv_text([MCQ_HEADER, mcq_row(1, b64(bomb))]),
        limits=ReadLimits(max_image_pixels=50_000_000),
    )
    assert rows == []
    assert "decompression bomb: 9400x9400" in reader.problems[0].reason


def test_images_come_without_metadata_and_each_removal_is_a_warning():
    cell = f"['{b64(jpeg_with_metadata())}', '{b64(png_with_metadata())}']"
    rows, reader = read_all(tsv_text([MCQ_HEADER, mcq_row(1, cell), mcq_row(2, "1")]))

    assert all(b"DOE" not in image for image in rows[0].images)
    assert [info.format for info in rows[0].image_infos] == ["JPEG", "PNG"]
    assert reader.warnings == [
        RowWarning(1, "image", "metadata_removed", "image 1: APP1 EXIF, APP1 XMP, COM (comment)"),
        RowWarning(1, "image", "metadata_removed", "image 2: tEXt, iTXt, eXIf"),
    ]


def test_an_image_without_metadata_is_kept_byte_for_byte_without_a_warning():
    frame = jpeg_bytes()
    rows, reader = read_all(tsv_text([MCQ_HEADER, mcq_row(1, b64(frame))]))
    assert rows[0].images == [frame] and reader.warnings == []


def test_formula_looking_cells_are_kept_verbatim_and_listed():
    row = mcq_row(1, b64(jpeg_bytes()), question='=HYPERLINK("http://x")')
    row[3] = "+1 polyp"
    row[4] = "-5"  # a plain number: harmless in a spreadsheet
    row[5] = "@SUM(A1)"
    rows, reader = read_all(tsv_text([MCQ_HEADER, row]))

    assert rows[0].question == '=HYPERLINK("http://x")'
    assert rows[0].options["A"] == "+1 polyp"
    assert [(w.column, w.code) for w in reader.warnings] == [
        ("question", "formula_like_cell"),
        ("A", "formula_like_cell"),
        ("C", "formula_like_cell"),
    ]


def test_the_endobench_json_reader_strips_metadata_and_bounds_image_files(tmp_path):
    small = jpeg_with_metadata()
    (tmp_path / "a.jpg").write_bytes(small)
    (tmp_path / "b.jpg").write_bytes(jpeg_with_metadata(size=(400, 400)))
    items = [
        {"id": n, "question": "Q?", "options": ["x", "y"], "answer": "A", "image_path": name}
        for n, name in ((1, "a.jpg"), (2, "b.jpg"))
    ]
    (tmp_path / "endo.json").write_text(json.dumps(items))
    reader = EndoBenchJsonReader(
        tmp_path / "endo.json", limits=ReadLimits(max_cell_bytes=len(small))
    )

    rows = list(reader)

    assert b"DOE" not in rows[0].images[0] and rows[0].image_infos[0].format == "JPEG"
    assert [w.code for w in reader.warnings] == ["metadata_removed"]
    assert reader.problems[0].row == 2 and "over the limit" in reader.problems[0].reason
