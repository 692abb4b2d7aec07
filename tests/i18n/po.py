"""A small reader of gettext .po files: enough to check ClinReview's catalogs."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

_KEYWORD = re.compile(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) (".*")$')


@dataclass
class Entry:
    msgid: str = ""
    msgctxt: str | None = None
    msgid_plural: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    obsolete: bool = False

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.msgctxt, self.msgid)


def _assign(entry: Entry, keyword: str, value: str) -> None:
    if keyword.startswith("msgstr"):
        index = int(keyword[7:-1]) if "[" in keyword else 0
        entry.msgstr[index] = entry.msgstr.get(index, "") + value
    elif keyword == "msgid":
        entry.msgid += value
    else:
        setattr(entry, keyword, (getattr(entry, keyword) or "") + value)


def read_po(path: Path) -> list[Entry]:
    """Every entry, header included (msgid ""); obsolete (#~) entries are marked."""
    entries: list[Entry] = []
    entry, keyword = None, None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if not line.strip():
            if entry is not None:
                entries.append(entry)
            entry, keyword = None, None
            continue
        entry = entry or Entry()
        if line.startswith("#~"):
            entry.obsolete = True
        elif line.startswith("#,"):
            entry.flags |= {flag.strip() for flag in line[2:].split(",")}
        elif not line.startswith("#"):
            match = _KEYWORD.match(line)
            if match:
                keyword = match.group(1)
                _assign(entry, keyword, ast.literal_eval(match.group(2)))
            elif line.startswith('"') and keyword:
                _assign(entry, keyword, ast.literal_eval(line))
    return entries
