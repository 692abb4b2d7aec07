"""Text a database cannot store, found in parsed JSON: a NUL character (``\\u0000``).

PostgreSQL refuses NUL in text; a file that holds one is a problem of the file (a report row with
its code), never a database error deep inside an import."""

from __future__ import annotations

from typing import Any

NUL_REASON = "holds a NUL character (\\u0000), which text cannot store"


def first_nul(value: Any, path: str = "") -> str | None:
    """The JSON path (``reports.ct``, ``questions[2].options[0]``) of the first string or key
    of `value` holding a NUL character, ``"(key)"``-marked for a key; None if there is none."""
    pending: list[tuple[str, Any]] = [(path, value)]
    while pending:
        where, current = pending.pop(0)
        if isinstance(current, str):
            if "\x00" in current:
                return where or "(value)"
        elif isinstance(current, dict):
            for key, item in current.items():
                here = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and "\x00" in key:
                    return f"{here.replace(chr(0), '?')} (key)"
                pending.append((here, item))
        elif isinstance(current, list):
            pending.extend((f"{where}[{number}]", item) for number, item in enumerate(current))
    return None
