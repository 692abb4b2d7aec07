"""The release writer: VLMEvalKit quoting, image reuse by index, JSON items, hashed as written."""

from __future__ import annotations

import base64
import hashlib
import io
import json

import pandas as pd
import pytest

from annotations.formats import stream
from annotations.formats.stream import HashingFile, JsonItems, TsvWriter, quoted

IMAGES = {1: b"\xff\xd8first", 2: b"\x89PNGsecond", 3: b"third"}


def b64(key):
    return base64.b64encode(IMAGES[key])


def cells(index, question, answer="A"):
    return {"index": quoted(index), "question": quoted(question), "answer": quoted(answer)}


def test_rows_quote_every_cell_reuse_images_by_index_and_read_back_as_vlmevalkit_reads(tmp_path):
    out = HashingFile(tmp_path / "t.tsv")
    tsv = TsvWriter(out, ["index", "image", "question", "answer"])
    tsv.write(cells(1, 'He said "hi"\tthen left'), 1, [1], b64)
    tsv.write(cells(2, "again"), 2, [1], b64)
    tsv.write(cells(3, "two"), 3, [2, 3], b64)
    tsv.write(cells(4, "two again"), 4, [2, 3], b64)
    tsv.write(cells(5, "none"), 5, [], b64)
    out.close()

    frame = pd.read_csv(tmp_path / "t.tsv", sep="\t")

    assert frame["image"][0] == b64(1).decode()
    assert frame["image"][1] == "1" and frame["image"][3] == "3" and pd.isna(frame["image"][4])
    assert frame["image"][2] == f"['{b64(2).decode()}', '{b64(3).decode()}']"
    assert frame["question"][0] == 'He said "hi"\tthen left'
    assert tsv.rows == 5


def test_only_shared_images_are_remembered(tmp_path):
    tsv = TsvWriter(HashingFile(tmp_path / "t.tsv"), ["index", "image"], shared={2})
    tsv.write({"index": '"1"'}, 1, [1], b64)
    tsv.write({"index": '"2"'}, 2, [2], b64)
    assert set(tsv._seen) == {2}


def test_a_nul_is_refused_in_text_rows_and_image_rows(tmp_path):
    tsv = TsvWriter(HashingFile(tmp_path / "t.tsv"), ["index", "image", "question"])
    with pytest.raises(ValueError, match="NUL"):
        tsv.write({"index": '"1"', "question": '"a\x00b"'}, 1, [1], b64)
    with pytest.raises(ValueError, match="NUL"):
        tsv.write({"index": '"1"', "question": '"a\x00b"'}, 1, [], b64)


def test_digests_are_those_of_the_bytes_on_disk_across_buffer_flushes(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "BUFFER", 7)
    out = HashingFile(tmp_path / "f")
    for piece in (b"abc", b"defghij", b"k" * 100, b""):
        out.write(piece)
    out.close()
    data = (tmp_path / "f").read_bytes()
    assert data == b"abcdefghij" + b"k" * 100
    assert out.digests() == {
        "bytes": len(data),
        "md5": hashlib.md5(data).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_an_existing_file_is_never_overwritten(tmp_path):
    (tmp_path / "f").write_bytes(b"kept")
    with pytest.raises(FileExistsError):
        HashingFile(tmp_path / "f")
    assert (tmp_path / "f").read_bytes() == b"kept"


def test_json_items_are_one_per_line_after_a_sorted_header(tmp_path):
    out = HashingFile(tmp_path / "j.json")
    items = JsonItems(out, {"name": "x", "b": 1}, key="answers")
    items.write({"z": 1, "a": "é"})
    items.write({"f": 1e-05}, fast=False)
    items.close()
    out.close()
    text = (tmp_path / "j.json").read_text(encoding="utf-8")
    assert text == '{"b":1,"name":"x","answers":[\n{"a":"é","z":1}\n,{"f":1e-05}\n]}\n'
    assert json.load(io.StringIO(text))["answers"][1] == {"f": 1e-05}
