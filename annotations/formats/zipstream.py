"""One zip archive of files on disk, streamed as it is written (a release's files in one download).

Nothing is held in memory beyond one chunk: zipfile writes to a sink that the caller drains
between chunks (data descriptors, since the sink cannot seek); zip64 for files over 4 GB.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

CHUNK = 1 << 20


class _Sink:
    """A write-only, unseekable file whose written bytes are taken out by `drain`."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._written = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self._written += len(data)
        return len(data)

    def tell(self) -> int:
        return self._written

    def flush(self) -> None:
        """Nothing buffered beyond the parts `drain` hands over."""

    def drain(self) -> bytes:
        data, self._parts = b"".join(self._parts), []
        return data


def stream_zip(entries: Iterable[tuple[str, Path]]) -> Iterator[bytes]:
    """The bytes of a zip holding each (name in the archive, file on disk), stored uncompressed
    (the images and TSVs are compressed already, or base64 text read by scripts)."""
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:  # type: ignore[call-overload]
        for name, path in entries:
            info = zipfile.ZipInfo.from_file(path, arcname=name)
            with path.open("rb") as source, archive.open(info, "w", force_zip64=True) as target:
                while chunk := source.read(CHUNK):
                    target.write(chunk)
                    yield sink.drain()
            yield sink.drain()
    yield sink.drain()
