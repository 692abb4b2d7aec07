"""The files of a CT volume on disk: removed with its row (alone, or with its case or benchmark).

Kept apart from `cases` (which loads SimpleITK and pydicom) because the app connects the
receiver at start-up, in every process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction

# Imported volumes live under MEDIA_ROOT/volumes/<import>/<case>/<phase>/ (dicom/, voxels/).
VOLUMES_FOLDER = "volumes"


def volume_files_delete(sender, instance, **kwargs) -> None:
    """`post_delete` of a Volume (alone, or with its case or benchmark): its de-identified
    series and voxel cache leave the disk once the deletion is committed; a deletion that is
    rolled back keeps them. Only a folder under MEDIA_ROOT/volumes is ever removed."""
    volumes = (Path(settings.MEDIA_ROOT) / VOLUMES_FOLDER).resolve()
    folder = (Path(settings.MEDIA_ROOT) / instance.cache_path).parent.resolve()
    if folder != volumes and volumes in folder.parents:
        transaction.on_commit(lambda: _remove_volume_folder(folder, volumes))


def _remove_volume_folder(folder: Path, volumes: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    # The case's and the import's folders go with their last volume.
    for parent in folder.parents:
        if parent == volumes:
            break
        try:
            parent.rmdir()
        except OSError:  # not empty: another volume still lives there
            break
