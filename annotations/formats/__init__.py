"""Pure readers and writers of benchmark files (no Django here).

`open_reader(path, family)` picks the reader for a file; iterate it for `McqRow`s,
then check its `problems`. Whole-file problems raise `FormatError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from annotations.formats.cells import ReadLimits
from annotations.formats.endobench import EndoBenchJsonReader, EndoBenchTsvReader
from annotations.formats.errors import FormatError, RowProblem
from annotations.formats.medqdeg import MedQDegTsvReader
from annotations.formats.vlmeval import McqRow, McqTsvReader, write_mcq_tsv

FAMILY_READERS: dict[str, type[McqTsvReader]] = {
    "vlmeval": McqTsvReader,
    "endobench": EndoBenchTsvReader,
    "medqdeg": MedQDegTsvReader,
}

__all__ = [
    "FAMILY_READERS",
    "EndoBenchJsonReader",
    "FormatError",
    "McqRow",
    "McqTsvReader",
    "ReadLimits",
    "RowProblem",
    "open_reader",
    "write_mcq_tsv",
]


def open_reader(
    path: str | os.PathLike[str],
    family: str,
    *,
    validate_images: bool = True,
    limits: ReadLimits | None = None,
) -> McqTsvReader | EndoBenchJsonReader:
    """The reader for a `family` file ("vlmeval", "endobench", "medqdeg").

    An EndoBench `.json` gets the JSON reader (images read from disk next to it);
    anything else is read as a TSV.
    """
    path = Path(path)
    if family not in FAMILY_READERS:
        raise ValueError(f"unknown family {family!r}, expected one of {sorted(FAMILY_READERS)}")
    if family == "endobench" and path.suffix.lower() == ".json":
        return EndoBenchJsonReader(path, validate_images=validate_images, limits=limits)
    return FAMILY_READERS[family](path, validate_images=validate_images, limits=limits)
