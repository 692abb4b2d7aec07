"""An import's staged images: placed with their rows, or undone without touching others'."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import transaction

from annotations.imaging.images import prepare_image
from annotations.models import Image
from annotations.services.images import (
    ImageStaging,
    image_store,
    import_work_dir,
    staged_images_discard,
)
from tests.formats.builders import jpeg_bytes

pytestmark = pytest.mark.django_db(transaction=True)


class Crash(Exception):
    """A worker dying between placing the files and committing the rows."""


def test_a_dead_attempt_is_undone_but_files_other_benchmarks_use_stay(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    shared, _ = image_store(data=jpeg_bytes("red"))  # another benchmark's image
    staging = ImageStaging(import_work_dir("job-7"))
    new = staging.add(prepare_image(jpeg_bytes("blue")))
    staging.add(prepare_image(jpeg_bytes("red")))  # linked, not written again
    with pytest.raises(Crash), transaction.atomic():
        staging.commit()
        placed = Path(settings.MEDIA_ROOT) / Image(sha256=new, format="JPEG").file.field.upload_to(
            Image(sha256=new, format="JPEG"), ""
        )
        assert placed.is_file()
        raise Crash

    assert staged_images_discard(import_work_dir("job-7")) == 1

    assert not placed.exists() and not import_work_dir("job-7").exists()
    assert Path(shared.file.path).read_bytes() == jpeg_bytes("red")
    assert list(Image.objects.values_list("sha256", flat=True)) == [shared.sha256]


def test_a_committed_attempt_places_each_image_once_with_its_row(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    staging = ImageStaging(import_work_dir("run-1"))
    digest = staging.add(prepare_image(jpeg_bytes("green")))
    staging.add(prepare_image(jpeg_bytes("green")))
    with transaction.atomic():
        ids = staging.commit()
    staging.remove()
    image = Image.objects.get(pk=ids[digest])
    assert Path(image.file.path).read_bytes() == jpeg_bytes("green")
    assert (image.format, image.width, image.height) == ("JPEG", 32, 24)
    assert not import_work_dir("run-1").exists()
