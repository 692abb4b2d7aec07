"""Output files that count and hash what is written, hashed by a second process as they grow.

md5 and sha256 of a release's files go into its manifest. Hashing after writing would read every
byte twice and add the hashing time to the export's; hashing in the exporting process, even on a
thread, makes every row pay for it: the hashing thread and the row-building thread trade the GIL
at each file read and write, which costs more than the hashing itself. So the exporting process
only writes (one `writev` per MiB of pieces, never copied into one buffer) and tells
`digest_worker.py`, a small standard-library process, how far each file has grown; that process
reads the new bytes back from the page cache and hashes them on the other core.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("digest_worker.py")
BATCH = 1 << 20
IOV_MAX = 1024  # pieces per writev; Linux's limit


class DigestError(RuntimeError):
    """The hashing process failed or went away: the release cannot be trusted."""


class Digester:
    """The hashing process of one export: every file of the export is announced to it."""

    def __init__(self) -> None:
        # -I -S: nothing from the environment or site-packages, the worker needs only hashlib.
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._files = 0
        self.digests: dict[int, dict] | None = None

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

    def close(self) -> None:
        """Wait for every file's digests (idempotent)."""
        if self.digests is not None:
            return
        # communicate() closes the pipes; a worker that died early is seen by its exit status.
        out, error = self._process.communicate(b"end\n")
        if self._process.returncode:
            raise DigestError(_failure_message(error, self._process.returncode))
        self.digests = {int(number): found for number, found in json.loads(out).items()}

    def abort(self) -> None:
        """Stop the worker without waiting for digests (the export failed)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            with contextlib.suppress(OSError):
                stream.close()

    def _failure(self) -> str:
        self._process.kill()
        self._process.wait()
        return _failure_message(self._process.stderr.read(), self._process.returncode)


def _failure_message(error: bytes, status: int) -> str:
    text = error.decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else f"exit status {status}"
    return f"hashing the release files failed: {last}"


class DigestFile:
    """A binary output file (`write(bytes)`, `mode`) whose md5, sha256 and size are known once
    the digester is closed."""

    mode = "wb"

    def __init__(self, path: Path, digester: Digester) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._digester = digester
        self._number = digester.open(self.path)
        self._pieces: list[bytes] = []
        self._pending = 0
        self._written = 0
        self.closed = False

    @property
    def size(self) -> int:
        """Bytes written so far (on disk or still pending)."""
        return self._written + self._pending

    def write(self, data: bytes) -> int:
        self._pieces.append(data)
        self._pending += len(data)
        if self._pending >= BATCH or len(self._pieces) >= IOV_MAX:
            self._flush()
        return len(data)

    def _flush(self) -> None:
        if not self._pieces:
            return
        pieces, self._pieces, self._pending = self._pieces, [], 0
        while pieces:
            done = os.writev(self._fd, pieces)
            self._written += done
            pieces = _after(pieces, done)
        self._digester.grow(self._number, self._written)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._flush()
        finally:
            os.close(self._fd)
        self._digester.close_file(self._number)

    def discard(self) -> None:
        """Close the file without writing what is pending (the export failed; it is deleted)."""
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def digests(self) -> dict[str, object]:
        """md5, sha256 and bytes; call after the digester's close()."""
        found = self._digester.digests[self._number]
        if found["bytes"] != self._written:
            raise DigestError(
                f"{self.path.name}: {found['bytes']} bytes hashed, not {self._written}"
            )
        return found


def _after(pieces: list[bytes], done: int) -> list[bytes]:
    """What remains of `pieces` once `done` bytes of them are written (writev may stop short)."""
    for index, piece in enumerate(pieces):
        if done < len(piece):
            return [piece[done:], *pieces[index + 1 :]] if done else pieces[index:]
        done -= len(piece)
    return []
