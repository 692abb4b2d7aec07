from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotations.formats import EndoBenchJsonReader, McqTsvReader, open_reader
from annotations.formats.endobench import EndoBenchTsvReader
from annotations.formats.medqdeg import MedQDegTsvReader
from tests.formats.builders import MCQ_HEADER, b64, jpeg_bytes, mcq_row, write_tsv


@pytest.mark.parametrize(
    ("family", "reader_type"),
    [("vlmeval", McqTsvReader), ("endobench", EndoBenchTsvReader), ("medqdeg", MedQDegTsvReader)],
)
def test_it_picks_the_tsv_reader_of_each_family(tmp_path: Path, family: str, reader_type: type):
    reader = open_reader(tmp_path / "bench.tsv", family)
    assert type(reader) is reader_type


def test_it_reads_a_vlmeval_file_end_to_end(tmp_path: Path):
    path = write_tsv(tmp_path / "bench.tsv", [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))])
    assert [row.index for row in open_reader(path, "vlmeval")] == [1]


def test_it_reads_an_endobench_json_with_the_json_reader(tmp_path: Path):
    path = tmp_path / "EndoBench.JSON"
    path.write_text(json.dumps([]))
    assert isinstance(open_reader(path, "endobench"), EndoBenchJsonReader)


def test_it_refuses_an_unknown_family(tmp_path: Path):
    with pytest.raises(ValueError, match="unknown family 'gastricx'"):
        open_reader(tmp_path / "x.tsv", "gastricx")
