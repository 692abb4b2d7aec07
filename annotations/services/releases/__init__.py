"""Releases: versioned, reproducible VLMEvalKit exports, streamed and published atomically.

- `selection`: which items and which TSV columns (per family), release name rules
- `export`: one streamed pass writing every file into a temporary folder, published by rename
- `tsv`, `provenance`, `cocofile`, `manifest`: the files; `sources`: image bytes; `writer`: hashing
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
from annotations.services.releases.export import (
    PART_BYTES,
    ExportOptions,
    ExportResult,
    release_export,
)
from annotations.services.releases.manifest import BOX_CONVENTION, SCHEMA_VERSION
from annotations.services.releases.selection import (
    FILTER_FIELDS,
    check_release_name,
    release_items,
)

__all__ = [
    "BOX_CONVENTION",
    "FILTER_FIELDS",
    "PART_BYTES",
    "SCHEMA_VERSION",
    "WITHHOLD_KEY",
    "ExportOptions",
    "ExportResult",
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
