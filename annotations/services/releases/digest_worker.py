"""The process that hashes a release's files while they are written, and writes some of their
image cells (the standard library and pybase64 only).

Run as a script by `writer.Digester` (`digest_worker.py ACK_FD`); it never imports Django or the
project. It reads commands, one per line, on stdin:

    open N PATH                  start hashing file N (PATH is the rest of the line)
    fill N OFFSET SIZE PATH      write the base64 of file PATH, which must hold SIZE bytes, at
                                 OFFSET of file N (a gap the exporter left), then write one byte
                                 to ACK_FD
    grow N SIZE                  file N now holds SIZE bytes on disk: hash up to there
    prefix N M SIZE              file N is file M's first SIZE bytes, where M's hashing stands:
                                 N's digests are M's at that point (N is not read)
    close N                      file N is complete
    link SIZE LEN SOURCE TARGET  hard-link the stored image SOURCE (LEN bytes of its path, then
                                 the target path; SIZE bytes of image) as TARGET in the release's
                                 images/ folder, or copy it across file systems (a TARGET that
                                 exists was placed for an earlier row), then write one byte to
                                 ACK_FD
    end                          print {"files": {"N": {"bytes", "md5", "sha256"}, ...},
                                 "links": {"files", "bytes"}} as JSON on stdout and exit

It reads what the exporting process has already written, straight from the page cache. Hashing
in a second process rather than a thread keeps md5 and sha256 off the exporter's GIL, which it
needs for every row; encoding image cells here uses what hashing leaves of this core. Commands
run in order, so a gap is filled before the `grow` that hashes it. On end of input without `end`
(the exporter died) it exits quietly.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys

from pybase64 import b64encode

BLOCK = 1 << 20
# How much of a file being written stays in the page cache behind the hashing (`CacheWindow`).
CACHE_BEHIND = 32 << 20
PAGE = 4096
_DONTNEED = getattr(os, "POSIX_FADV_DONTNEED", None)


# One buffer for every read: a fresh 1 MiB object per read would be fresh memory each time,
# and in a virtual machine its page faults cost more than the read.
# Made in `main`, so that importing this module (for `place_image`) allocates nothing.
_BUFFER = memoryview(b"")


class CacheWindow:
    """Keeps a file being written from filling the page cache: bytes that are done with (hashed,
    or never to be read) are written back at once and dropped a little later.

    A release writes gigabytes that nobody reads again soon. Left in the page cache they push out
    what the server does read (its database, the stored images), and they cost fresh memory for
    every page: in a virtual machine whose free memory goes back to the host, that is a host
    page fault per 4 KiB page, several times the cost of the write itself. Dropped pages are
    reused for the next ones. `posix_fadvise(DONTNEED)` starts the write-back of dirty pages and
    drops the clean ones, so each range is advised twice: when it is done with (write-back
    starts), and once `CACHE_BEHIND` more bytes are done (written back by then: dropped).
    Without `posix_fadvise` (not Linux), or where the file system refuses it, nothing is
    advised: it is advice, and the files are the same either way.
    """

    __slots__ = ("dropped", "fd", "started")

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd if _DONTNEED is not None else None
        self.started = 0  # write-back started up to here
        self.dropped = 0  # dropped up to here (a page boundary)

    def advance(self, done: int) -> None:
        """The file's first `done` bytes are written and nobody here will read them again."""
        if self.fd is None or done <= self.started:
            return
        try:
            os.posix_fadvise(self.fd, self.started, done - self.started, _DONTNEED)
            self.started = done
            if done - self.dropped >= 2 * CACHE_BEHIND:
                end = (done - CACHE_BEHIND) // PAGE * PAGE
                os.posix_fadvise(self.fd, self.dropped, end - self.dropped, _DONTNEED)
                self.dropped = end
        except OSError:
            self.fd = None


class _File:
    __slots__ = ("cache", "handle", "md5", "path", "sha256", "size", "writer")

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed on `close`
        self.cache = CacheWindow(self.handle.fileno())
        self.md5 = hashlib.md5()
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.writer: int | None = None  # opened at the first image cell to fill

    def _writer(self) -> int:
        if self.writer is None:
            self.writer = os.open(self.path, os.O_WRONLY)
        return self.writer

    def fill(self, offset: int, size: int, source: str) -> None:
        data = read_stored_image(source, size)
        encoded = memoryview(b64encode(data))
        writer = self._writer()
        while encoded:
            done = os.pwrite(writer, encoded, offset)
            encoded, offset = encoded[done:], offset + done

    def grow(self, size: int) -> None:
        while self.size < size:
            count = self.handle.readinto(_BUFFER[: min(BLOCK, size - self.size)])
            if not count:
                raise OSError(f"{self.handle.name} is shorter than the {size} bytes announced")
            block = _BUFFER[:count]
            self.md5.update(block)
            self.sha256.update(block)
            self.size += count
        self.cache.advance(self.size)

    def take_prefix(self, source: _File, size: int) -> None:
        if source.size != size or self.size:
            raise OSError(f"{self.path} cannot take the digests of {source.path} at byte {size}")
        self.md5, self.sha256 = source.md5.copy(), source.sha256.copy()
        self.size = size
        self.handle.seek(size)

    def digests(self) -> dict[str, object]:
        self.handle.close()
        if self.writer is not None:
            os.close(self.writer)
        return {"bytes": self.size, "md5": self.md5.hexdigest(), "sha256": self.sha256.hexdigest()}


def read_stored_image(path: str, size: int) -> bytes:
    """A stored image's bytes, which must be `size` (its recorded size); also used by
    `sources.Payloads`, so that both processes read and refuse an image the same way.

    One system call per image: a release reads every image once, so the file object and buffer
    that `open()` builds per call cost as much as the read itself. A stored image never changes
    (it is named by its hash), so another size means the file was damaged; and the exporter
    left a gap of exactly the recorded size's base64 for it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, size + 1)
        while len(data) < size and (block := os.read(fd, size + 1 - len(data))):
            data += block
    finally:
        os.close(fd)
    if len(data) != size:
        raise OSError(f"{path} holds {len(data)} bytes, not the {size} its record says")
    return data


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")  # as the exporter encoded it


def place_image(source: str, target: str) -> bool:
    """Link (or copy) a stored image into a release's images/; False when the target was
    already placed (for an earlier row). Also used by `sources.Payloads.place`."""
    # Stored images are content-addressed and never rewritten, so a hard link is as good as a
    # copy and costs no disk; across file systems (or where links are refused) we copy.
    try:
        os.link(source, target)
    except FileExistsError:
        return False
    except OSError:
        try:
            with open(source, "rb") as src, open(target, "xb") as out:
                shutil.copyfileobj(src, out)
        except FileExistsError:
            return False
    return True


def main(ack: int) -> int:
    global _BUFFER
    _BUFFER = memoryview(bytearray(BLOCK))
    files: dict[bytes, _File] = {}  # by the number the exporter gave each file
    done: dict[str, dict] = {}
    links = {"files": 0, "bytes": 0}
    for line in sys.stdin.buffer:
        command, _, rest = line.rstrip(b"\n").partition(b" ")
        if command == b"fill":
            number, offset, size, path = rest.split(b" ", 3)
            files[number].fill(int(offset), int(size), _path(path))
            os.write(ack, b".")
        elif command == b"prefix":
            number, source, size = rest.split(b" ")
            files[number].take_prefix(files[source], int(size))
        elif command == b"grow":
            number, size = rest.split(b" ")
            files[number].grow(int(size))
        elif command == b"open":
            number, path = rest.split(b" ", 1)
            files[number] = _File(_path(path))
        elif command == b"close":
            done[rest.decode()] = files.pop(rest).digests()
        elif command == b"link":
            size, length, paths = rest.split(b" ", 2)
            source, target = paths[: int(length)], paths[int(length) :]
            if place_image(_path(source), _path(target)):
                links["files"] += 1
                links["bytes"] += int(size)
            os.write(ack, b".")
        elif command == b"end":
            json.dump({"files": done, "links": links}, sys.stdout)
            sys.stdout.flush()
            return 0
        else:
            raise ValueError(f"unknown command {command!r}")
    return 1  # the exporter went away before the end


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
