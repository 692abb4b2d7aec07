"""Deterministic, streamed JSON for release files: same data, same bytes."""

from __future__ import annotations

import datetime
import io
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

_ENCODER_OPTIONS: dict[str, Any] = {
    "sort_keys": True,
    "ensure_ascii": False,
    "separators": (",", ":"),
    "allow_nan": False,  # NaN/Infinity are not JSON; other tools would reject the file
}


def dumps_canonical(value: Any) -> str:
    """One value as canonical JSON text (sorted keys, UTF-8 text, no spaces)."""
    return _ENCODER.encode(value)


def write_items_json(
    out: IO[str] | IO[bytes], header: Mapping[str, Any], items: Iterable[Mapping[str, Any]]
) -> None:
    """Stream `{...header, "items": [item, ...]}` to `out`, one item per line.

    Header keys are sorted and `items` comes last; items keep their order. Works
    on text and binary files (UTF-8); never holds more than one item as text.
    """
    if "items" in header:
        raise ValueError("the header cannot have an 'items' key")
    write = text_writer(out)
    for chunk in _chunks(header, items):
        write(chunk)


def _chunks(header: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    head = dumps_canonical(dict(header))
    yield head[:-1] + (',"items":[' if header else '"items":[')
    for number, item in enumerate(items):
        yield ("\n," if number else "\n") + dumps_canonical(item)
    yield "\n]}\n"


def text_writer(out: IO[str] | IO[bytes]) -> Any:
    """A function writing `str` to `out`, encoding to UTF-8 when `out` is binary."""
    if isinstance(out, io.TextIOBase) or "b" not in getattr(out, "mode", "b"):
        return out.write
    return lambda text: out.write(text.encode("utf-8"))


def _plain_value(value: Any) -> Any:
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value)  # sets have no order; sorting keeps output byte-stable
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# One encoder for every call: a release encodes one value per item, and `json.dumps` with
# options builds a new encoder each time. Encoders keep no state between calls.
_ENCODER = json.JSONEncoder(default=_plain_value, **_ENCODER_OPTIONS)
