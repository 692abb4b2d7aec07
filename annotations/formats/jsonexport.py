"""Deterministic, streamed JSON for release files: same data, same bytes."""

from __future__ import annotations

import datetime
import io
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

import orjson

_ENCODER_OPTIONS: dict[str, Any] = {
    "sort_keys": True,
    "ensure_ascii": False,
    "separators": (",", ":"),
    "allow_nan": False,  # NaN/Infinity are not JSON; other tools would reject the file
}


def dumps_canonical(value: Any) -> str:
    """One value as canonical JSON text (sorted keys, UTF-8 text, no spaces)."""
    return _ENCODER.encode(value)


def dumps_canonical_bytes(value: Any) -> bytes:
    """One value as canonical JSON in UTF-8, several times faster than `dumps_canonical`, for
    the hundreds of thousands of items of a release's NAME.json.

    The same text as `dumps_canonical(value).encode()` (sorted keys, no spaces, UTF-8, dates in
    ISO) but for two things: small floats are written without an exponent (0.00001, not 1e-05;
    the same number to every JSON reader), and NaN or Infinity become null instead of an error.
    So a caller passes only values that cannot hold them, as the release export does: its floats
    come from JSON columns, which both databases keep free of NaN, and from CT geometry, which it
    checks once per case.
    """
    return orjson.dumps(value, default=_plain_value, option=_ORJSON_OPTIONS)


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON text, refusing NaN and Infinity (which `json.loads` accepts), as JSON itself
    does; raises `ValueError` (orjson.JSONDecodeError) on anything that is not JSON."""
    return orjson.loads(text)


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
    if isinstance(value, float):
        return float(value)  # a float subclass (numpy's float64), which `json` writes as a float
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# One encoder for every call: a release encodes one value per item, and `json.dumps` with
# options builds a new encoder each time. Encoders keep no state between calls.
_ENCODER = json.JSONEncoder(default=_plain_value, **_ENCODER_OPTIONS)
# Keys must be strings, as they are in every item: `json` would sort int keys as numbers, orjson
# as text, so a non-string key is refused (TypeError) rather than written in another order.
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS
