"""Releases: versioned, reproducible VLMEvalKit exports, streamed and published atomically.

- `selection`: which items and which TSV columns (per family), release name rules
- `rows`, `provenance`: the items as rows, TSV cells and NAME.json items, a chunk at a time
- `export`: one pass writing and hashing every file (`formats.stream`) into a partial folder,
  published by rename
- `build`: the Release row (create, build, fail, retry)
"""

from __future__ import annotations

from annotations.services.releases.build import (
    WITHHOLD_KEY,
    release_build,
    release_create,
    release_fail,
    release_folder,
    release_retry,
    release_selection,
    release_start,
)
from annotations.services.releases.export import PART_BYTES, ExportOptions, release_export
from annotations.services.releases.selection import FILTER_FIELDS, check_release_name, release_items

__all__ = [
    "FILTER_FIELDS",
    "PART_BYTES",
    "WITHHOLD_KEY",
    "ExportOptions",
    "check_release_name",
    "release_build",
    "release_create",
    "release_export",
    "release_fail",
    "release_folder",
    "release_items",
    "release_retry",
    "release_selection",
    "release_start",
]
