"""A release whose whole worker is killed mid-build is rebuilt from scratch by a new worker, on
Redis and on the file-system broker; nothing is half-published, the manifest's md5s are right."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import pytest

from annotations.models import Image, Item, Release, ReleaseItem, ReleaseStatus
from annotations.services.releases import release_start
from tests.factories import jpeg_bytes, make_benchmark, make_item
from tests.integration.conftest import beat_args, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ITEMS = 1500
# This item's image file becomes a FIFO: the build blocks there, in its second chunk, after the
# first chunk's rows and progress were recorded; the worker is killed while it waits.
BLOCKED_AT = 1200


def frame(index: int) -> bytes:
    """A small JPEG of its own: a comment segment makes every frame's bytes distinct."""
    picture, comment = jpeg_bytes(color=(index % 256, 90, 60)), f"frame {index}".encode()
    return picture[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + picture[2:]


def wait_for_reader(fifo: Path) -> int:
    """Block until the build has opened the FIFO for reading; return our write end."""

    def opened() -> int | None:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            return None

    return wait_for(opened, timeout=240, interval=0.05)


def test_a_killed_release_build_is_rebuilt_by_a_new_worker_and_never_half_published(
    broker, celery_worker_process, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"  # read by the workers started below
    settings.RELEASES_ROOT = tmp_path / "releases"
    benchmark = make_benchmark("killed-release", family="endobench")
    for index in range(1, ITEMS + 1):
        make_item(benchmark, index=index, image=frame(index), status="agreed")
    blocked = Item.objects.get(benchmark=benchmark, source_index=BLOCKED_AT)
    image = Path(settings.MEDIA_ROOT) / blocked.item_images.get().image.file.name
    original = image.read_bytes()
    image.unlink()
    os.mkfifo(image)

    first = celery_worker_process(env=broker.worker_env(recovery=True))
    release = release_start(benchmark=benchmark, name="KilledRelease", version="1.0")
    target = Path(release.path)
    writer = wait_for_reader(image)
    building = Release.objects.get(pk=release.pk)
    # Rows and progress of the first chunk are committed on their own: the page shows them.
    assert building.status == ReleaseStatus.BUILDING and 1000 <= building.progress < ITEMS
    partial = [p for p in target.parent.iterdir() if ".partial-" in p.name]
    assert len(partial) == 1 and (partial[0] / "KilledRelease.tsv").exists()
    first.kill()
    os.close(writer)
    assert not target.exists()

    image.unlink()
    image.write_bytes(original)
    celery_worker_process(*beat_args(tmp_path), env=broker.worker_env(recovery=True))
    seen_half = []

    def ended():
        # The published folder appears whole (one rename) or not at all.
        if target.exists() and not (target / "manifest.json").exists():
            seen_half.append(sorted(p.name for p in target.iterdir()))
        return Release.objects.filter(
            pk=release.pk, status__in=[ReleaseStatus.PUBLISHED, ReleaseStatus.FAILED]
        ).first()

    release = wait_for(ended, timeout=300, interval=0.05)

    assert release.status == ReleaseStatus.PUBLISHED, release.error
    assert seen_half == []
    assert release.recoveries >= 1 and release.attempts >= 2
    assert release.progress == release.item_count == ITEMS
    assert ReleaseItem.objects.filter(release=release).count() == ITEMS
    # The dead attempt's partial folder was removed; no other is left.
    assert not [p for p in target.parent.iterdir() if ".partial-" in p.name]
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest == release.manifest and manifest["items"] == ITEMS
    on_disk = {p.name for p in target.iterdir()}
    assert on_disk == {*manifest["files"], "manifest.json"}
    for name, digests in manifest["files"].items():
        data = (target / name).read_bytes()
        assert digests["md5"] == hashlib.md5(data).hexdigest(), name
        assert digests["sha256"] == hashlib.sha256(data).hexdigest(), name
    assert Image.objects.count() == ITEMS
