"""Release files hashed by the digest worker process: exact digests, short writes, a dead worker."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

import pytest

from annotations.services.imports import benchmark_import
from annotations.services.releases import release_export, writer
from annotations.services.releases.tsv import TsvFile, quoted
from annotations.services.releases.writer import Digester, DigestError, DigestFile
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, jpeg_bytes, write_tsv


def expected(data: bytes) -> dict:
    return {
        "bytes": len(data),
        "md5": hashlib.md5(data).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_the_worker_hashes_every_file_exactly_as_written(tmp_path):
    rng = random.Random(5)
    big = [rng.randbytes(rng.randrange(1, 70_000)) for _ in range(60)]  # several batches
    digester = Digester()
    files = {
        "big.tsv": (DigestFile(tmp_path / "big.tsv", digester), big),
        "empty.json": (DigestFile(tmp_path / "empty.json", digester), []),
        "small.json": (DigestFile(tmp_path / "small.json", digester), [b"{", b'"a":1', b"}\n"]),
    }
    for out, pieces in files.values():
        for piece in pieces:
            out.write(piece)
    for out, _ in files.values():
        out.close()
    digester.close()

    for name, (out, pieces) in files.items():
        data = b"".join(pieces)
        assert (tmp_path / name).read_bytes() == data
        assert out.digests() == expected(data)
        assert out.size == len(data)


def test_a_short_write_is_continued_where_it_stopped():
    pieces = [b"abc", b"defg", b"hi"]
    assert writer._after(pieces, 0) == pieces
    assert writer._after(pieces, 2) == [b"c", b"defg", b"hi"]
    assert writer._after(pieces, 3) == [b"defg", b"hi"]
    assert writer._after(pieces, 8) == [b"i"]
    assert writer._after(pieces, 9) == []


def test_short_writes_still_give_the_whole_file(tmp_path, monkeypatch):
    real = os.writev
    monkeypatch.setattr(writer.os, "writev", lambda fd, pieces: real(fd, [pieces[0][:5]]))
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    data = [b"0123456789" * 50, b"x" * 7, b"tail"]
    for piece in data:
        out.write(piece)
    out.close()
    digester.close()
    assert (tmp_path / "f.tsv").read_bytes() == b"".join(data)
    assert out.digests() == expected(b"".join(data))


@pytest.mark.django_db
def test_a_dead_hashing_process_fails_the_export_and_leaves_nothing(tmp_path, monkeypatch):
    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_bytes("red"))), endo_row(2, b64(jpeg_bytes("blue")))]
    benchmark = benchmark_import(
        path=write_tsv(tmp_path / "s.tsv", rows), family="endobench", name="bench"
    )
    dying = tmp_path / "dying_worker.py"
    dying.write_text(
        "import sys\nsys.stdin.readline()\nsys.stderr.write('out of memory\\n')\nsys.exit(3)\n"
    )
    monkeypatch.setattr(writer, "WORKER", dying)
    out = tmp_path / "exports" / "release"

    with pytest.raises(DigestError, match="out of memory"):
        release_export(benchmark=benchmark, out_dir=out, include_all=True)

    assert not out.exists()
    assert list((tmp_path / "exports").iterdir()) == []


def test_the_worker_quits_when_the_exporter_goes_away(tmp_path):
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    out.write(b"rows")
    out.close()
    digester._process.stdin.close()  # as when the exporting process is killed
    assert digester._process.wait(timeout=10) == 1  # quietly, without digests
    assert Path(tmp_path / "f.tsv").read_bytes() == b"rows"


def test_a_worker_that_dies_mid_export_is_reported_at_the_next_write(tmp_path, monkeypatch):
    dying = tmp_path / "dying_worker.py"
    dying.write_text("import sys\nsys.stderr.write('killed by the OOM killer\\n')\nsys.exit(9)\n")
    monkeypatch.setattr(writer, "WORKER", dying)
    digester = Digester()
    digester._process.wait(timeout=10)
    out = DigestFile(tmp_path / "f.tsv", digester)
    with pytest.raises(DigestError, match="OOM killer"):
        for _ in range(300):  # more than the pipe holds: a write meets the closed pipe
            out.write(b"x" * writer.BATCH)
    out.discard()
    digester.abort()


def test_a_row_quotes_text_streams_images_and_refuses_a_nul(tmp_path):
    digester = Digester()
    tsv = TsvFile(tmp_path / "t.tsv", digester, ["index", "image", "question", "answer"])

    def cells(**values):
        return {column: quoted(value) for column, value in values.items()}

    tsv.write(cells(index=1, question='a "b"', answer="A"), b"/9g=")
    tsv.write(cells(index=2, question="q", answer=None), [b"AQ==", b"AQI="])
    tsv.write(cells(index=3, question="reuse", answer="B"), "1")
    with pytest.raises(ValueError, match="NUL"):
        tsv.write(cells(index=4, question="bad\x00", answer="A"), b"AQ==")
    with pytest.raises(ValueError, match="NUL"):
        tsv.write(cells(index=5, question="bad\x00", answer="A"), "")
    with pytest.raises(ValueError, match="NUL"):
        tsv.write(cells(index=6, question="fine", answer="A"), "1\x00")
    tsv.close()
    digester.close()

    assert tsv.rows == 3
    assert (tmp_path / "t.tsv").read_text().splitlines() == [
        '"index"\t"image"\t"question"\t"answer"',
        '"1"\t"/9g="\t"a ""b"""\t"A"',
        '"2"\t"[\'AQ==\', \'AQI=\']"\t"q"\t""',
        '"3"\t"1"\t"reuse"\t"B"',
    ]
