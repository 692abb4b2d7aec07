"""Resolving image paths written inside benchmark files, without escaping their folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath


class UnsafePathError(ValueError):
    """A path in a file is absolute or climbs out of the folders it may use."""


def resolve_image_path(text: str, folders: Sequence[Path]) -> Path:
    """Find `text` (a relative path) inside the first of `folders` that holds it.

    Refuses absolute paths, drive letters and `..` components, and any path whose
    real location (after symlinks) lies outside the folder, raising
    `UnsafePathError`; raises `FileNotFoundError` when no folder holds the file.
    """
    relative = _safe_relative(text)
    for folder in folders:
        candidate = folder / relative
        if not candidate.is_file():
            continue
        if not candidate.resolve().is_relative_to(folder.resolve()):
            raise UnsafePathError(f"{text!r} leads outside {folder.name}/ through a link")
        return candidate
    searched = ", ".join(f"{folder.name or folder}/" for folder in folders)
    raise FileNotFoundError(f"image {text!r} not found in {searched}")


def _safe_relative(text: str) -> PurePosixPath:
    # Benchmarks made on Windows write backslashes; treat them as separators.
    cleaned = text.strip().replace("\\", "/")
    if not cleaned:
        raise UnsafePathError("empty image path")
    path = PurePosixPath(cleaned)
    has_drive = len(cleaned) > 1 and cleaned[1] == ":"
    if path.is_absolute() or has_drive:
        raise UnsafePathError(f"absolute image path {text!r} is not allowed")
    if ".." in path.parts:
        raise UnsafePathError(f"image path {text!r} climbs out of its folder ('..')")
    return path
