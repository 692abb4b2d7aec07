"""Releases: `selection` (items, names, label sets) → `export` (one pass; rows and columns from
`selectors.release_rows`, NAME.json items from `provenance` + `formats.release_json`, the task
files from `taskfiles`, files from `formats.stream`) → `build` (the Release row: create, build
under a lease, fail, retry)."""

from __future__ import annotations

from annotations.formats.release_layout import PART_BYTES, ExportOptions
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
from annotations.services.releases.export import release_export
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
