"""Release files hashed by the digest worker process: exact digests, short writes, a dead worker."""

from __future__ import annotations

import base64
import hashlib
import os
import random
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from annotations.services.imports import benchmark_import
from annotations.services.releases import release_export, writer
from annotations.services.releases.sources import ImageRef, Payloads
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
    real = os.pwritev
    monkeypatch.setattr(
        writer.os, "pwritev", lambda fd, pieces, offset: real(fd, [pieces[0][:5]], offset)
    )
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    data = [b"0123456789" * 50, b"x" * 7, b"tail"]
    for piece in data:
        out.write(piece)
    out.close()
    digester.close()
    assert (tmp_path / "f.tsv").read_bytes() == b"".join(data)
    assert out.digests() == expected(b"".join(data))


def test_the_worker_writes_image_cells_into_the_gaps_left_for_them(tmp_path):
    rng = random.Random(8)
    images = []
    for number, size in enumerate([1, 2, 3, 4, 5, 60_000, 300_000, 1_500_000]):
        path = tmp_path / f"image{number}.jpg"
        path.write_bytes(rng.randbytes(size))
        images.append(path)
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    expected_bytes = b""
    for number, path in enumerate(images * 3):  # several batches; gaps at a batch's edge
        text = f'"{number}"\t"'.encode()
        out.write(text)
        expected_bytes += text
        data = path.read_bytes()
        if number % 3:  # some cells written by the exporter, the others left to the worker
            out.fill_image(str(path), len(data))
        else:
            out.write(base64.b64encode(data))
        expected_bytes += base64.b64encode(data)
        if number % 4:  # sometimes two cells in a row
            out.write(b'"\n')
            expected_bytes += b'"\n'
    out.fill_image(str(images[5]), images[5].stat().st_size)  # a gap at the very end
    expected_bytes += base64.b64encode(images[5].read_bytes())
    out.close()
    digester.close()

    assert digester.handed_over == 17
    assert (tmp_path / "f.tsv").read_bytes() == expected_bytes
    assert out.digests() == expected(expected_bytes)
    assert out.size == len(expected_bytes)


def test_the_worker_refuses_an_image_whose_size_is_not_the_recorded_one(tmp_path):
    image = tmp_path / "image.jpg"
    image.write_bytes(b"\xff\xd8 damaged")
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    out.fill_image(str(image), 400)
    out.close()
    with pytest.raises(DigestError, match=r"image.jpg holds 10 bytes, not the 400"):
        digester.close()
    digester.abort()


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


def test_rows_are_the_same_bytes_whoever_writes_their_images(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    rng = random.Random(3)
    refs = []
    for number in range(40):
        data = rng.randbytes(rng.randrange(1, 90_000))
        name = f"images/{number:02d}.jpg"
        (tmp_path / "media" / "images").mkdir(parents=True, exist_ok=True)
        (tmp_path / "media" / name).write_bytes(data)
        refs.append(ImageRef(number, name, "JPEG", f"{number:064x}", len(data)))
    digester = Digester()
    files = [
        TsvFile(tmp_path / f"{who}.tsv", digester, ["index", "image", "question"], hand_over=who)
        for who in (True, False)
    ]
    payloads = Payloads()
    for tsv in files:
        for number, ref in enumerate(refs):
            cells = {"index": quoted(number), "question": quoted(f"q{number}")}
            group = refs[number : number + 3] if number % 5 == 0 else [ref]
            tsv.write(cells, tsv.image_cell(number, group), payloads)
        tsv.write({"index": quoted(99), "question": quoted("reuse")}, tsv.image_cell(99, [refs[1]]))
        tsv.close()
    digester.close()

    handed, kept = ((tmp_path / f"{who}.tsv").read_bytes() for who in (True, False))
    assert 0 < digester.handed_over < 2 * len(refs)  # the worker wrote some of the first file's
    assert handed == kept
    assert files[0].digests() == expected(handed)
    rows = kept.decode().splitlines()
    first = base64.b64encode((tmp_path / "media" / refs[1].file).read_bytes()).decode()
    assert rows[2] == f'"1"\t"{first}"\t"q1"'  # row 1: its own image, in full
    assert rows[-1] == '"99"\t"1"\t"reuse"'
    assert rows[1].startswith('"0"\t"[\'') and rows[1].count("', '") == 2  # a list cell


def test_a_row_kept_in_hand_is_written_here_and_a_part_writes_the_same_pieces(tmp_path, settings):
    """While parts are written, NAME.tsv's rows are written whole by the exporter (`keep`) and
    a part that holds the same row writes the same pieces: no cell is left to the worker, and
    the part, NAME.tsv's first bytes, takes NAME.tsv's digests."""
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media" / "images").mkdir(parents=True)
    rng = random.Random(5)
    refs = []
    for number in range(30):
        data = rng.randbytes(rng.randrange(1, 90_000))
        (tmp_path / "media" / f"images/{number}.jpg").write_bytes(data)
        refs.append(ImageRef(number, f"images/{number}.jpg", "JPEG", f"{number:064x}", len(data)))
    prefixes = []
    real_prefix = Digester.prefix
    digester = Digester()
    digester.prefix = lambda *args: prefixes.append(args) or real_prefix(digester, *args)
    columns = ["index", "image", "question"]
    main = TsvFile(tmp_path / "main.tsv", digester, columns)
    part = TsvFile(tmp_path / "part1.tsv", digester, columns, header_from=main)
    payloads = Payloads()
    for number, ref in enumerate(refs):
        cells = {"index": quoted(number), "question": quoted(f"q{number}")}
        group = refs[number : number + 2] if number % 4 == 0 else [ref]
        start = main.out.size
        pieces = main.write(cells, main.image_cell(number, group), payloads, keep=True)
        assert sum(map(len, pieces)) == main.out.size - start
        part.image_cell(number, group)
        part.mirror(main, start, pieces)
    # More pieces in one go than one writev takes.
    start = main.out.size
    tiny = [b"x"] * (2 * writer.IOV_MAX + 3)
    for piece in tiny:
        main.out.write(piece)
    part.out.mirror(main.out, start, tiny)
    part.close()
    main.write({"index": quoted(99), "question": quoted("after")}, "")
    main.close()
    digester.close()

    data = (tmp_path / "main.tsv").read_bytes()
    assert digester.handed_over == 0
    assert (tmp_path / "part1.tsv").read_bytes() == data[: part.out.size]
    assert part.digests() == expected(data[: part.out.size])
    assert main.digests() == expected(data)
    assert len(prefixes) == 1  # the part was not hashed again
    rows = data.decode().splitlines()
    assert rows[2] == f'"1"\t"{base64.b64encode(payloads.get(refs[1]).data).decode()}"\t"q1"'


def test_the_worker_places_each_image_once_linked_or_copied_across_file_systems(tmp_path):
    source = tmp_path / "stored.jpg"
    source.write_bytes(b"\xff\xd8 frame")
    same_disk = tmp_path / "images"
    same_disk.mkdir()
    other_disk = Path(tempfile.mkdtemp(dir="/dev/shm"))  # tmpfs: a hard link cannot cross
    try:
        digester = Digester()
        for folder in (same_disk, other_disk, same_disk):  # the third is a repeat: skipped
            digester.link(str(source), str(folder / "abc.jpg"), source.stat().st_size)
        digester.close()
        assert digester.links == {"files": 2, "bytes": 2 * source.stat().st_size}
        assert (same_disk / "abc.jpg").stat().st_ino == source.stat().st_ino  # a hard link
        copied = other_disk / "abc.jpg"
        assert copied.read_bytes() == source.read_bytes()
        assert copied.stat().st_ino != source.stat().st_ino
    finally:
        shutil.rmtree(other_disk)


def test_parts_follow_their_source_between_cells_the_worker_fills(tmp_path):
    """Parts mirror the source's rows (bytes in hand) and write rows of their own, while the
    worker fills image cells into the source: every file is exactly what was written."""
    rng = random.Random(11)
    image = tmp_path / "image.jpg"
    image.write_bytes(rng.randbytes(200_000))
    digester = Digester()
    source = DigestFile(tmp_path / "main.tsv", digester)
    parts = [DigestFile(tmp_path / f"part{n}.tsv", digester) for n in (1, 2)]
    expected_parts = [b"header 1\n", b"header 2\n"]
    for part, header in zip(parts, expected_parts, strict=True):
        part.write(header)
    for number in range(120):  # about 12 MB: every file flushes many times
        target = parts[number * 2 // 120]
        start = source.size
        row = rng.randbytes(rng.randrange(1, 120_000))
        source.write(row)
        if number % 7 == 3:  # a cell the worker writes into the source; the part writes its own
            source.fill_image(str(image), 200_000)
            row += base64.b64encode(image.read_bytes())
            target.write(b"own " + row)
            expected_parts[number * 2 // 120] += b"own " + row
        else:
            target.mirror(source, start, [row[:5], row[5:]])
            expected_parts[number * 2 // 120] += row
    parts[1].close()
    source.close()
    parts[0].close()
    digester.close()

    main_bytes = (tmp_path / "main.tsv").read_bytes()
    assert source.digests() == expected(main_bytes) and len(main_bytes) == source.size
    for number, part in enumerate(parts):
        assert (tmp_path / f"part{number + 1}.tsv").read_bytes() == expected_parts[number]
        assert part.digests() == expected(expected_parts[number])
        assert part.size == len(expected_parts[number])


@pytest.mark.parametrize("then", ["source goes on", "source flushed on", "source closed first"])
def test_a_file_that_is_the_start_of_another_takes_its_digests_without_hashing_again(
    tmp_path, monkeypatch, then
):
    prefixes = []
    real_prefix = Digester.prefix
    monkeypatch.setattr(
        Digester, "prefix", lambda self, *args: prefixes.append(args) or real_prefix(self, *args)
    )
    rng = random.Random(4)
    digester = Digester()
    source = DigestFile(tmp_path / "main.tsv", digester)
    part = DigestFile(tmp_path / "part1.tsv", digester)
    for _ in range(30):  # several flushes of the source while the part follows it
        start = source.size
        row = rng.randbytes(rng.randrange(1, 200_000))
        source.write(row)
        part.mirror(source, start, [row])
    head = source.size
    if then == "source goes on":  # the part ends where the source stands: the usual case
        part.close()
        source.write(b"more rows")
    elif then == "source flushed on":  # hashed past the part's end: the part hashes itself
        source.write(rng.randbytes(3 << 20))
        part.close()
    else:
        source.close()
        part.close()
    source.close()
    digester.close()

    data = (tmp_path / "main.tsv").read_bytes()
    assert (tmp_path / "part1.tsv").read_bytes() == data[:head]
    assert part.digests() == expected(data[:head])
    assert source.digests() == expected(data)
    assert len(prefixes) == (then == "source goes on")


def test_a_file_with_bytes_of_its_own_is_hashed_as_written(tmp_path):
    digester = Digester()
    source = DigestFile(tmp_path / "main.tsv", digester)
    source.write(b"header\nrow 1\n")
    part = DigestFile(tmp_path / "part.tsv", digester)
    part.mirror(source, 0, [b"header\n"])
    part.write(b"row 1 written here\n")
    part.mirror(source, 7, [b"row 1\n"])
    part.close()
    source.close()
    digester.close()
    assert part.digests() == expected(b"header\nrow 1 written here\nrow 1\n")


def test_the_worker_refuses_a_prefix_where_the_source_does_not_stand(tmp_path, monkeypatch):
    from annotations.services.releases import digest_worker

    monkeypatch.setattr(digest_worker, "_BUFFER", memoryview(bytearray(digest_worker.BLOCK)))
    (tmp_path / "main").write_bytes(b"abc")
    (tmp_path / "part").write_bytes(b"ab")
    source, part = (digest_worker._File(str(tmp_path / n)) for n in ("main", "part"))
    try:
        source.grow(3)
        with pytest.raises(OSError, match="cannot take the digests"):
            part.take_prefix(source, 2)
    finally:
        source.digests()
        part.digests()


def test_a_file_that_mirrors_a_mirror_is_hashed_on_its_own(tmp_path):
    digester = Digester()
    source = DigestFile(tmp_path / "main.tsv", digester)
    source.write(b"rows\n")
    part = DigestFile(tmp_path / "part.tsv", digester)
    part.mirror(source, 0, [b"rows\n"])
    copy = DigestFile(tmp_path / "copy.tsv", digester)
    copy.mirror(part, 0, [b"rows\n"])  # `part` is not hashed itself: `copy` cannot take its state
    for out in (copy, part, source):
        out.close()
    digester.close()
    assert copy.digests() == part.digests() == expected(b"rows\n")


def test_the_digester_works_where_the_pipe_size_cannot_be_set(tmp_path, monkeypatch):
    monkeypatch.delattr(writer.fcntl, "F_SETPIPE_SZ")  # not Linux
    digester = Digester()
    out = DigestFile(tmp_path / "f.tsv", digester)
    out.write(b"rows\n")
    out.close()
    digester.close()
    assert out.digests() == expected(b"rows\n")


class _Advice:
    """posix_fadvise calls, recorded: (fd, offset, length)."""

    def __init__(self, monkeypatch, module) -> None:
        self.calls: list[tuple[int, int, int]] = []
        monkeypatch.setattr(module, "CACHE_BEHIND", 1 << 20)
        monkeypatch.setattr(
            module.os,
            "posix_fadvise",
            lambda fd, offset, length, advice: self.calls.append((fd, offset, length)),
        )


def test_written_bytes_are_written_back_at_once_and_dropped_a_window_later(monkeypatch):
    from annotations.services.releases import digest_worker

    advice = _Advice(monkeypatch, digest_worker)
    behind, page = digest_worker.CACHE_BEHIND, digest_worker.PAGE
    window = digest_worker.CacheWindow(7)
    done = dropped = 0
    for step in [300_000] * 20 + [5, 0, 1_000_001]:
        before = len(advice.calls)
        done += step
        window.advance(done)
        calls = advice.calls[before:]
        if not step:
            assert calls == []  # nothing new: no advice
            continue
        # First the new bytes, for write-back ...
        assert calls[0] == (7, done - step, step)
        # ... then, once two windows are done with, all but the last window: dropped.
        if done - dropped >= 2 * behind:
            end = (done - behind) // page * page
            assert calls[1:] == [(7, dropped, end - dropped)]
            dropped = end
        else:
            assert calls[1:] == []
    assert dropped > 0 and window.dropped == dropped and window.started == done


def test_advice_the_file_system_refuses_is_not_asked_again(monkeypatch):
    from annotations.services.releases import digest_worker

    calls = []

    def refuse(*args):
        calls.append(args)
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(digest_worker.os, "posix_fadvise", refuse)
    window = digest_worker.CacheWindow(3)
    window.advance(10)
    window.advance(20)
    assert len(calls) == 1  # refused once: not asked again


def test_a_part_that_takes_its_source_digests_lets_its_pages_go_itself(tmp_path, monkeypatch):
    """The worker never reads the first part (it takes NAME.tsv's digests), so the exporter
    advises its pages itself; the files are the same bytes as without advice."""
    from annotations.services.releases import digest_worker

    advice = _Advice(monkeypatch, digest_worker)
    digester = Digester()
    source = DigestFile(tmp_path / "main.tsv", digester)
    part = DigestFile(tmp_path / "part1.tsv", digester)
    rng = random.Random(11)
    for _ in range(40):
        piece = rng.randbytes(100_000)
        start = source.size
        source.write(piece)
        part.mirror(source, start, [piece])
    part.close()
    source.write(b"tail")
    source.close()
    digester.close()

    data = (tmp_path / "main.tsv").read_bytes()
    assert part.digests() == expected(data[: part.size])
    assert source.digests() == expected(data)
    # Its pages: all of them started on their write-back, the older ones dropped.
    assert {fd for fd, _, _ in advice.calls} == {part._fd}
    assert part._cache.started == part.size
    assert 0 < part._cache.dropped <= part.size - digest_worker.CACHE_BEHIND


def test_the_exporter_places_images_itself_while_the_worker_is_busy(tmp_path, settings):
    """Links go to the worker only while it has room (`WORKER_AHEAD` not yet acknowledged); the
    others are placed here, and the manifest counts every image once whoever placed it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media" / "images").mkdir(parents=True)
    refs = []
    for number in range(200):
        data = b"\xff\xd8" + number.to_bytes(2, "big") * 50
        (tmp_path / "media" / f"images/{number}.jpg").write_bytes(data)
        refs.append(ImageRef(number, f"images/{number}.jpg", "JPEG", f"{number:064x}", len(data)))
    digester = Digester()
    payloads = Payloads()
    payloads.worker = digester
    folder = tmp_path / "images_out"
    folder.mkdir()
    os.kill(digester._process.pid, signal.SIGSTOP)  # a worker busy hashing: it acknowledges nothing
    try:
        for ref in refs:
            payloads.place(str(folder), ref)
    finally:
        os.kill(digester._process.pid, signal.SIGCONT)
    for ref in refs[:10] + refs[-10:]:  # again (by either process): already placed
        payloads.place(str(folder), ref)
    digester.close()

    # The worker was handed its queue's worth (and perhaps some repeats); the rest were placed
    # here. Each image counts once, for whichever process placed it first.
    assert writer.WORKER_AHEAD <= digester.linked <= writer.WORKER_AHEAD + 20
    assert digester.links["files"] <= writer.WORKER_AHEAD
    assert payloads.files_written + digester.links["files"] == len(refs)
    assert payloads.bytes_written + digester.links["bytes"] == sum(ref.size for ref in refs)
    for ref in refs:
        placed = folder / Payloads.name(ref)
        assert placed.stat().st_ino == (tmp_path / "media" / ref.file).stat().st_ino
