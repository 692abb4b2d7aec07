"""Output files that count and hash what is written, hashing on a background thread.

md5 and sha256 of a release's files go into its manifest. Hashing after writing would read every
byte twice; hashing in the writing thread would add its cost to base64's. hashlib releases the GIL
on large blocks, so a second thread hashes 1 MiB blocks while the main thread encodes the next ones.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from pathlib import Path

BLOCK = 1 << 20
DIRECT = 1 << 14
# At most this many blocks wait for the hasher: memory stays bounded whatever the release size.
QUEUE_BLOCKS = 16


class _Digest:
    __slots__ = ("md5", "sha256", "size")

    def __init__(self) -> None:
        self.md5 = hashlib.md5()
        self.sha256 = hashlib.sha256()
        self.size = 0


class Hasher:
    """One background thread hashing the blocks of every file of one export."""

    def __init__(self) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=QUEUE_BLOCKS)
        self._thread = threading.Thread(target=self._run, name="release-hasher", daemon=True)
        self._error: BaseException | None = None
        self._thread.start()

    def _run(self) -> None:
        while True:
            task = self._queue.get()
            if task is None:
                return
            digest, block = task
            try:
                digest.md5.update(block)
                digest.sha256.update(block)
            except BaseException as error:  # surfaced by close(); keep draining the queue
                self._error = error

    def submit(self, digest: _Digest, block: bytes) -> None:
        self._queue.put((digest, block))

    def close(self) -> None:
        """Wait until every submitted block is hashed (idempotent)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            raise self._error


class DigestFile:
    """A binary output file (`write(bytes)`, `mode`) whose md5, sha256 and size are known on close."""

    mode = "wb"

    def __init__(self, path: Path, hasher: Hasher) -> None:
        self.path = Path(path)
        self._file = open(self.path, "wb")  # noqa: SIM115 - closed by close()
        self._hasher = hasher
        self._buffer = bytearray()
        self._digest = _Digest()
        self.closed = False

    @property
    def size(self) -> int:
        """Bytes written so far (flushed or not)."""
        return self._digest.size + len(self._buffer)

    def write(self, data: bytes) -> int:
        if len(data) >= DIRECT:
            # An image's base64: written and hashed as it is, never copied into the buffer.
            self._flush()
            self._emit(data)
            return len(data)
        self._buffer += data
        if len(self._buffer) >= BLOCK:
            self._flush()
        return len(data)

    def _emit(self, block: bytes) -> None:
        self._file.write(block)
        self._digest.size += len(block)
        self._hasher.submit(self._digest, block)

    def _flush(self) -> None:
        if not self._buffer:
            return
        block = bytes(self._buffer)
        self._buffer.clear()
        self._emit(block)

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._flush()
        finally:
            self._file.close()
            self.closed = True

    def digests(self) -> dict[str, object]:
        """md5, sha256 and bytes; call after close() and the hasher's close()."""
        return {
            "bytes": self._digest.size,
            "md5": self._digest.md5.hexdigest(),
            "sha256": self._digest.sha256.hexdigest(),
        }


def file_digests(path: Path) -> dict[str, object]:
    """md5, sha256 and size of a file already on disk."""
    md5, sha256 = hashlib.md5(), hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(BLOCK):
            md5.update(chunk)
            sha256.update(chunk)
            size += len(chunk)
    return {"bytes": size, "md5": md5.hexdigest(), "sha256": sha256.hexdigest()}
