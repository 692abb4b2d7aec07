"""Output files that count and hash what is written, hashed by a second process as they grow.

md5 and sha256 of a release's files go into its manifest. Hashing after writing would read every
byte twice and add the hashing time to the export's; hashing in the exporting process, even on a
thread, makes every row pay for it: the hashing thread and the row-building thread trade the GIL
at each file read and write, which costs more than the hashing itself. So the exporting process
only writes (one `writev` per MiB of pieces, never copied into one buffer) and tells
`digest_worker.py`, a small process (hashlib and pybase64), how far each file has grown; that process
reads the new bytes back from the page cache and hashes them on the other core.

Hashing leaves that core idle part of the time, so the worker also writes image cells: the
exporter leaves a gap of the cell's exact length (base64 of a file of known size), tells the
worker which file goes there, and goes on with the next row; the worker reads the image, encodes
it into the gap, then hashes past it (its commands run in order, and the gap's `fill` comes before
the `grow` that covers it). The worker also places the local layout's images (a hard link each,
`link`: about 17 µs of system time per image here, almost a second at 50k). The exporter hands
over a cell or a link only while the worker has fewer than `WORKER_AHEAD` of them still to do,
and does it itself otherwise: so each process takes as much of that work as its core has room
for, whichever of the two hashing or row building keeps busier.

A release over 1 GB is also written as parts, whose rows are NAME.tsv's rows again. While
parts are written, the exporter writes NAME.tsv's rows whole (no cell left to the worker, which
then has a second file to hash) and hands a part the same pieces (`mirror`): a second `writev`
of bytes in hand costs this core less than any copy would cost the worker's. Only a row that
differs in a part (an image whose first showing is in an earlier part) is written anew. The
first part is NAME.tsv's first bytes exactly, so its md5 and sha256 are NAME.tsv's hash states
where it ends (`prefix`): it is not hashed again.

Base64 is pybase64's (SIMD; ten times the standard library's speed here, the same text).

What is written and hashed does not stay in the page cache (`digest_worker.CacheWindow`): the
worker lets each file's pages go a little behind its hashing, and the exporter those of a first
part, which nobody reads. The cache holds a few dozen MiB per file rather than the whole release.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from annotations.services.releases.digest_worker import CacheWindow

WORKER = Path(__file__).with_name("digest_worker.py")
BATCH = 1 << 20
IOV_MAX = 1024  # pieces per writev; Linux's limit
# Image cells and links the worker may have queued: enough to keep it busy between two batches,
# few enough that the exporter does the rest itself when hashing keeps the worker busy.
WORKER_AHEAD = 64
RECHECK_AFTER = 8  # jobs done here before looking again when the worker was full
COMMAND_PIPE_BYTES = 1 << 20  # Linux's default limit for an unprivileged process


def base64_length(size: int) -> int:
    """Length of the base64 text (no newline) of `size` bytes."""
    return 4 * ((size + 2) // 3)


class DigestError(OSError):
    """The worker failed or went away (it could not read an image, write a cell or hash a file):
    the release files cannot be trusted."""


class Digester:
    """The digest worker of one export: every file of the export is announced to it."""

    def __init__(self) -> None:
        # The worker writes one byte to `acks` per image cell it has filled or image it placed.
        self._acks, acks_out = os.pipe()
        os.set_blocking(self._acks, False)
        # -I: nothing from the environment; the worker needs hashlib and pybase64 only.
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", str(WORKER), str(acks_out)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(acks_out,),
            )
        except BaseException:
            os.close(self._acks)
            raise
        finally:
            os.close(acks_out)
        # Room for many commands: the exporter should not wait on the worker's pipe for each.
        # (Linux only; elsewhere the default pipe is slower, not wrong.)
        set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None)
        if set_pipe_size is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(self._process.stdin.fileno(), set_pipe_size, COMMAND_PIPE_BYTES)
        self._files = 0
        self._fills = 0  # image cells handed to the worker
        self._jobs = 0  # image cells and links handed to the worker
        self._done = 0  # ... and acknowledged as done
        self._skip = 0  # jobs to go before looking for acknowledgements again
        self.digests: dict[int, dict] | None = None
        self.links: dict[str, int] | None = None  # images the worker placed: files, bytes

    def _send(self, line: str, *, flush: bool = False) -> None:
        try:
            self._process.stdin.write(line.encode("utf-8", "surrogateescape"))
            if flush:
                self._process.stdin.flush()
        except BrokenPipeError:
            raise DigestError(self._failure()) from None

    def open(self, path: Path) -> int:
        text = str(path)
        if "\n" in text:
            raise ValueError("a release file's path cannot hold a line break")
        number = self._files
        self._files += 1
        self._send(f"open {number} {text}\n")
        return number

    def grow(self, number: int, size: int) -> None:
        # Flushed at once: the worker hashes while we encode the next batch.
        self._send(f"grow {number} {size}\n", flush=True)

    def close_file(self, number: int) -> None:
        self._send(f"close {number}\n")

    @property
    def handed_over(self) -> int:
        """Image cells the worker has been given to write."""
        return self._fills

    @property
    def linked(self) -> int:
        """Images the worker has been given to place."""
        return self._jobs - self._fills

    def has_room(self) -> bool:
        """Whether the worker can take another image cell or link now (see WORKER_AHEAD)."""
        if self._jobs - self._done >= WORKER_AHEAD:
            # Full: the worker is busy. Its acknowledgements are read again only after a few
            # jobs, which we do ourselves: a read that finds none costs a system call and an
            # exception, more than it would save.
            if self._skip:
                self._skip -= 1
                return False
            try:
                self._done += len(os.read(self._acks, 1 << 16))
            except BlockingIOError:
                self._skip = RECHECK_AFTER
                return False
        return self._jobs - self._done < WORKER_AHEAD

    def fill(self, number: int, offset: int, size: int, path: str) -> None:
        """Have the worker write the base64 of `path` (`size` bytes) at `offset` of file
        `number`; sent at once, so that the worker encodes while we build the next rows, and
        before the `grow` that covers it."""
        self._fills += 1
        self._jobs += 1
        self._send(f"fill {number} {offset} {size} {path}\n", flush=True)

    def link(self, source: str, target: str, size: int) -> None:
        """Have the worker place the stored image `source` (`size` bytes) as `target` in the
        release's images/ folder: a hard link, or a copy across file systems; once per target
        (a target placed meanwhile by the exporter is left as it is). Ask `has_room` first."""
        source_bytes = source.encode("utf-8", "surrogateescape")
        target_bytes = target.encode("utf-8", "surrogateescape")
        if b"\n" in source_bytes or b"\n" in target_bytes:
            raise ValueError("an image path cannot hold a line break")
        # The source's length in bytes tells the worker where the target starts.
        line = b"link %d %d %b%b\n" % (size, len(source_bytes), source_bytes, target_bytes)
        self._jobs += 1
        try:
            self._process.stdin.write(line)
        except BrokenPipeError:
            raise DigestError(self._failure()) from None

    def prefix(self, number: int, source: int, size: int) -> None:
        """File `number` is the first `size` bytes of file `source`, which is on disk and has
        been announced up to exactly there: its digests are `source`'s at that point."""
        self._send(f"prefix {number} {source} {size}\n")

    def close(self) -> None:
        """Wait for every file's digests (idempotent)."""
        if self.digests is not None:
            return
        # communicate() closes the pipes; a worker that died early is seen by its exit status.
        out, error = self._process.communicate(b"end\n")
        self._close_acks()
        if self._process.returncode:
            raise DigestError(_failure_message(error, self._process.returncode))
        found = json.loads(out)
        self.digests = {int(number): digests for number, digests in found["files"].items()}
        self.links = found["links"]

    def abort(self) -> None:
        """Stop the worker without waiting for digests (the export failed)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            with contextlib.suppress(OSError):
                stream.close()
        self._close_acks()

    def _close_acks(self) -> None:
        if self._acks is not None:
            os.close(self._acks)
            self._acks = None

    def _failure(self) -> str:
        self._process.kill()
        self._process.wait()
        return _failure_message(self._process.stderr.read(), self._process.returncode)


def _failure_message(error: bytes, status: int) -> str:
    text = error.decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else f"exit status {status}"
    return f"writing and hashing the release files failed: {last}"


class DigestFile:
    """A binary output file (`write(bytes)`, `mode`) whose md5, sha256 and size are known once
    the digester is closed. `fill_image` leaves a gap that the worker fills with an image;
    `mirror` appends bytes another DigestFile has just written."""

    mode = "wb"

    def __init__(self, path: Path, digester: Digester) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._digester = digester
        self._number = digester.open(self.path)
        # Pending pieces in runs of consecutive bytes: (file offset, pieces); a gap ends a run.
        self._runs: list[tuple[int, list[bytes]]] = []
        self._pieces: list[bytes] = []
        self._start = 0  # offset of the run being built
        self._end = 0  # offset after everything written or left as a gap so far
        self._pending = 0
        self._count = 0
        self._flushed = 0  # everything before this offset is on disk (or being filled)
        # While every byte so far is the same byte of one file (mirrored at the same offsets),
        # that file: this one is not hashed on its own (see `close`).
        self._prefix_of: DigestFile | None = None
        # While this file is not hashed on its own, the worker never reads it: we let its pages
        # go from the page cache ourselves (the worker does so for the files it hashes).
        self._cache = CacheWindow(self._fd)
        self.closed = False

    @property
    def size(self) -> int:
        """Bytes written so far (on disk, pending, or left for the worker to fill)."""
        return self._end

    def write(self, data: bytes) -> int:
        if self._prefix_of is not None:
            self._prefix_of = None  # bytes of its own: hashed as written from now on
        self._pieces.append(data)
        self._end += len(data)
        self._pending += len(data)
        self._count += 1
        if self._pending >= BATCH or self._count >= IOV_MAX:
            self._flush()
        return len(data)

    def worker_has_room(self) -> bool:
        return self._digester.has_room()

    def fill_image(self, path: str, size: int) -> None:
        """Leave room for the base64 of the `size`-byte file at `path`, written by the worker."""
        self._end_run()
        self._prefix_of = None
        length = base64_length(size)
        self._digester.fill(self._number, self._end, size, path)
        self._end += length
        self._start = self._end

    def mirror(self, source: DigestFile, offset: int, pieces: list[bytes]) -> None:
        """Append `pieces`, the bytes `source` holds at `offset` (just written to it). While
        this file is `source`'s first bytes exactly, it takes `source`'s digests at its end
        instead of being hashed again (`close`)."""
        if not self._end and not offset:
            self._prefix_of = source
        elif self._prefix_of is not source or offset != self._end:
            self._prefix_of = None
        size = sum(map(len, pieces))
        self._pieces.extend(pieces)
        self._end += size
        self._pending += size
        self._count += len(pieces)
        if self._pending >= BATCH or self._count >= IOV_MAX:
            self._flush()

    def _end_run(self) -> None:
        """Close the run of pieces being built: a gap or a flush follows."""
        if self._pieces:
            self._runs.append((self._start, self._pieces))
            self._pieces = []

    def _flush(self) -> None:
        self._end_run()
        runs, self._runs = self._runs, []
        self._start, self._pending, self._count = self._end, 0, 0
        for offset, pieces in runs:
            while pieces:
                done = os.pwritev(self._fd, pieces[:IOV_MAX], offset)
                offset += done
                pieces = _after(pieces, done)
        if self._end > self._flushed and self._prefix_of is None:
            self._flushed = self._end
            self._digester.grow(self._number, self._end)
        elif self._prefix_of is not None:
            self._cache.advance(self._end)

    def close(self) -> None:
        if self.closed:
            return
        if self._prefix_of is not None:
            self._prefix_of._flush()  # hashed to its end, where our digests may be its own
        self.closed = True
        try:
            self._flush()
        finally:
            os.close(self._fd)
        source = self._prefix_of
        if source is not None:
            if not source.closed and source._end == source._flushed == self._end:
                # The worker has hashed `source` up to exactly here: its state is ours.
                self._digester.prefix(self._number, source._number, self._end)
            else:  # `source` went on (or was closed): hash our own bytes after all
                self._prefix_of = None
                self._flush()
        self._digester.close_file(self._number)

    def discard(self) -> None:
        """Close the file without writing what is pending (the export failed; it is deleted)."""
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def digests(self) -> dict[str, object]:
        """md5, sha256 and bytes; call after the digester's close()."""
        found = self._digester.digests[self._number]
        if found["bytes"] != self._end:
            raise DigestError(f"{self.path.name}: {found['bytes']} bytes hashed, not {self._end}")
        return found


def _after(pieces: list[bytes], done: int) -> list[bytes]:
    """What remains of `pieces` once `done` bytes of them are written (writev may stop short)."""
    for index, piece in enumerate(pieces):
        if done < len(piece):
            return [piece[done:], *pieces[index + 1 :]] if done else pieces[index:]
        done -= len(piece)
    return []
