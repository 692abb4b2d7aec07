"""Extracting an uploaded zip safely: no entry outside the target folder (``..``, absolute
paths, drive letters, symlinks), no encrypted entry, and limits on the number of entries and on
the bytes written, counted while writing so that a lying header cannot get past them. Gastric-X
case zips and EndoBench JSON zips (the JSON with its images) come this way."""

from __future__ import annotations

import shutil
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from annotations.formats.errors import FormatError, RowProblem

DEFAULT_MAX_ZIP_BYTES = 4 * 1024**3
DEFAULT_MAX_ZIP_ENTRIES = 200_000
_COPY_CHUNK = 1024 * 1024


def extract_zip(
    zip_path: Path,
    extract_to: Path,
    *,
    max_total_bytes: int = DEFAULT_MAX_ZIP_BYTES,
    max_entries: int = DEFAULT_MAX_ZIP_ENTRIES,
    select: Callable[[str], str] | None = None,
) -> None:
    """Extract ``zip_path`` into the empty folder ``extract_to`` (made if missing); raises
    ``FormatError`` on an unsafe entry or past a limit, with nothing left extracted.

    ``select(name)`` (default: every entry whole) says what becomes of each entry: "whole",
    "empty" (an empty file, so that the layout is there without the bytes), "folder" (only the
    folder it is in) or "skip".
    Every entry is checked for safety whatever it selects."""
    extract_to = Path(extract_to)
    if extract_to.exists() and any(extract_to.iterdir()):
        raise FormatError(RowProblem(0, None, f"extraction folder {extract_to} is not empty"))
    extract_to.mkdir(parents=True, exist_ok=True)
    try:
        _extract_safely(Path(zip_path), extract_to, max_total_bytes, max_entries, select)
    except BaseException:
        shutil.rmtree(extract_to, ignore_errors=True)
        raise


def _extract_safely(
    zip_path: Path,
    target: Path,
    max_total: int,
    max_entries: int,
    select: Callable[[str], str] | None,
) -> None:
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as error:
        raise FormatError(
            RowProblem(0, None, f"not a readable zip file: {error}", "not_zip")
        ) from None
    with archive:
        entries = archive.infolist()
        if len(entries) > max_entries:
            raise FormatError(
                RowProblem(0, None, f"zip has {len(entries)} entries, limit {max_entries}")
            )
        declared = sum(entry.file_size for entry in entries)
        if declared > max_total:
            raise FormatError(RowProblem(0, None, _too_big(declared, max_total), "zip_too_large"))
        root = target.resolve()
        written = 0
        for entry in entries:
            destination = _safe_destination(entry, root)
            taken = "whole" if select is None else select(entry.filename)
            if taken == "skip":
                continue
            try:
                if taken == "folder" and not entry.is_dir():
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    continue
                if entry.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                destination.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                raise FormatError(_name_clash(entry)) from None
            if destination.is_dir():
                raise FormatError(_name_clash(entry))
            if taken == "empty":
                destination.touch()
                continue
            written = _copy_entry(archive, entry, destination, written, max_total)


def _name_clash(entry: zipfile.ZipInfo) -> RowProblem:
    reason = "cannot be extracted: a file and a folder of the zip have the same name"
    return RowProblem(0, entry.filename, reason)


def _safe_destination(entry: zipfile.ZipInfo, root: Path) -> Path:
    name = entry.filename.replace("\\", "/")
    path = PurePosixPath(name)
    refuse = None
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        refuse = "absolute path"
    elif ".." in path.parts:
        refuse = "'..' climbs out of the extraction folder"
    elif stat.S_ISLNK(entry.external_attr >> 16):
        refuse = "symbolic links are not allowed"
    elif entry.flag_bits & 0x1:
        refuse = "encrypted entries are not supported"
    destination = root.joinpath(*path.parts)
    if refuse is None and not destination.resolve().is_relative_to(root):
        refuse = "resolves outside the extraction folder"
    if refuse is not None:
        raise FormatError(
            RowProblem(0, entry.filename, f"unsafe zip entry: {refuse}", "unsafe_zip_entry")
        )
    return destination


def _copy_entry(
    archive: zipfile.ZipFile, entry: zipfile.ZipInfo, destination: Path, written: int, limit: int
) -> int:
    try:
        with archive.open(entry) as source, destination.open("wb") as sink:
            while chunk := source.read(_COPY_CHUNK):
                written += len(chunk)
                if written > limit:
                    raise FormatError(
                        RowProblem(0, entry.filename, _too_big(written, limit), "zip_too_large")
                    )
                sink.write(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        raise FormatError(RowProblem(0, entry.filename, f"corrupt zip entry: {error}")) from None
    return written


def _too_big(size: int, limit: int) -> str:
    return f"zip expands to more than {limit:,} bytes ({size:,}): refused as a decompression bomb"
