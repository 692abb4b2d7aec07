"""The process that hashes a release's files while they are written, and writes some of their
image cells (standard library only).

Run as a script by `writer.Digester` (`digest_worker.py ACK_FD`); it never imports Django or the
project. It reads commands, one per line, on stdin:

    open N PATH                  start hashing file N (PATH is the rest of the line)
    fill N OFFSET SIZE PATH      write the base64 of file PATH, which must hold SIZE bytes, at
                                 OFFSET of file N (a gap the exporter left), then write one byte
                                 to ACK_FD
    grow N SIZE                  file N now holds SIZE bytes on disk: hash up to there
    close N                      file N is complete
    end                          print {"N": {"bytes", "md5", "sha256"}, ...} as JSON on stdout
                                 and exit

It reads what the exporting process has already written, straight from the page cache. Hashing
in a second process rather than a thread keeps md5 and sha256 off the exporter's GIL, which it
needs for every row; encoding image cells here uses what hashing leaves of this core. Commands
run in order, so a gap is filled before the `grow` that hashes it. On end of input without `end`
(the exporter died) it exits quietly.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import os
import sys

BLOCK = 1 << 20


# One buffer for every read: a fresh 1 MiB object per read would be fresh memory each time,
# and in a virtual machine its page faults cost more than the read.
_BUFFER = memoryview(bytearray(BLOCK))


class _File:
    __slots__ = ("handle", "md5", "path", "sha256", "size", "writer")

    def __init__(self, path: str) -> None:
        self.path = path
        self.handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed on `close`
        self.md5 = hashlib.md5()
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.writer: int | None = None  # opened at the first image cell to fill

    def fill(self, offset: int, size: int, source: str) -> None:
        data = _read_exactly(source, size)
        encoded = memoryview(binascii.b2a_base64(data, newline=False))
        if self.writer is None:
            self.writer = os.open(self.path, os.O_WRONLY)
        while encoded:
            done = os.pwrite(self.writer, encoded, offset)
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

    def digests(self) -> dict[str, object]:
        self.handle.close()
        if self.writer is not None:
            os.close(self.writer)
        return {"bytes": self.size, "md5": self.md5.hexdigest(), "sha256": self.sha256.hexdigest()}


def _read_exactly(path: str, size: int) -> bytes:
    """The file's bytes, which must be `size`: the exporter left a gap of that length."""
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


def main(ack: int) -> int:
    files: dict[str, _File] = {}
    done: dict[str, dict] = {}
    for line in sys.stdin.buffer:
        command, _, rest = line.rstrip(b"\n").partition(b" ")
        if command == b"fill":
            number, offset, size, path = rest.split(b" ", 3)
            name = path.decode("utf-8", "surrogateescape")
            files[number.decode()].fill(int(offset), int(size), name)
            os.write(ack, b".")
        elif command == b"grow":
            number, size = rest.split(b" ")
            files[number.decode()].grow(int(size))
        elif command == b"open":
            number, path = rest.split(b" ", 1)
            files[number.decode()] = _File(path.decode("utf-8", "surrogateescape"))
        elif command == b"close":
            number = rest.decode()
            done[number] = files.pop(number).digests()
        elif command == b"end":
            json.dump(done, sys.stdout)
            sys.stdout.flush()
            return 0
        else:
            raise ValueError(f"unknown command {command!r}")
    return 1  # the exporter went away before the end


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
