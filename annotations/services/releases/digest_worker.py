"""The process that hashes a release's files while they are written (standard library only).

Run as a script by `writer.Digester`; it never imports Django or the project. It reads commands,
one per line, on stdin:

    open N PATH    start hashing file N (PATH is the rest of the line)
    grow N SIZE    file N now holds SIZE bytes on disk: hash up to there
    close N        file N is complete
    end            print {"N": {"bytes", "md5", "sha256"}, ...} as JSON on stdout and exit

It reads what the exporting process has already written, straight from the page cache. Hashing
in a second process rather than a thread keeps md5 and sha256 off the exporter's GIL, which it
needs for every row. On end of input without `end` (the exporter died) it exits quietly.
"""

from __future__ import annotations

import hashlib
import json
import sys

BLOCK = 1 << 20


# One buffer for every read: a fresh 1 MiB object per read would be fresh memory each time,
# and in a virtual machine its page faults cost more than the read.
_BUFFER = memoryview(bytearray(BLOCK))


class _File:
    __slots__ = ("handle", "md5", "sha256", "size")

    def __init__(self, path: str) -> None:
        self.handle = open(path, "rb", buffering=0)  # noqa: SIM115 - closed on `close`
        self.md5 = hashlib.md5()
        self.sha256 = hashlib.sha256()
        self.size = 0

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
        return {"bytes": self.size, "md5": self.md5.hexdigest(), "sha256": self.sha256.hexdigest()}


def main() -> int:
    files: dict[str, _File] = {}
    done: dict[str, dict] = {}
    for line in sys.stdin.buffer:
        command, _, rest = line.rstrip(b"\n").partition(b" ")
        if command == b"grow":
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
    sys.exit(main())
