"""Recorded releases: create, build on a worker, publish once, fail cleanly, retry; the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.models import Image, Release, ReleaseItem, ReleaseStatus
from annotations.services.errors import DomainError
from annotations.services.releases import release_build, release_create, release_retry
from annotations.tasks.releases import release_build_task
from tests.factories import make_personas
from tests.releases.helpers import endo_benchmark, read_tsv

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return make_personas()


@pytest.fixture
def benchmark(people):
    return endo_benchmark(people)


def new_release(benchmark, people, version="1.0", **fields) -> Release:
    return release_create(
        benchmark=benchmark, name="EndoRelease", version=version, user=people["curator"], **fields
    )


def test_the_task_builds_and_publishes_the_release_with_its_item_revisions(
    benchmark, people, settings
):
    release = new_release(benchmark, people)
    assert release.status == ReleaseStatus.QUEUED and release.item_count == 4

    release_build_task(release.pk)

    release.refresh_from_db()
    assert release.status == ReleaseStatus.PUBLISHED and release.published_at
    assert Path(release.path) == Path(settings.RELEASES_ROOT) / "EndoRelease" / "1.0"
    assert release.manifest["items"] == 4 and release.progress == 4
    rows = ReleaseItem.objects.filter(release=release).order_by("item__source_index")
    assert [(r.item.source_index, r.item_version) for r in rows] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert json.loads((Path(release.path) / "manifest.json").read_text()) == release.manifest


def test_a_published_release_is_never_rebuilt(benchmark, people):
    release = new_release(benchmark, people)
    release_build(release=release)
    before = (Path(release.path) / "EndoRelease.tsv").stat().st_mtime_ns

    release_build_task(release.pk)
    release_build(release=release)

    assert (Path(release.path) / "EndoRelease.tsv").stat().st_mtime_ns == before
    assert ReleaseItem.objects.filter(release=release).count() == 4


def test_a_version_is_created_once(benchmark, people):
    new_release(benchmark, people)
    with pytest.raises(DomainError, match="already exists"):
        new_release(benchmark, people)
    with pytest.raises(DomainError, match="circularly"):
        release_create(benchmark=benchmark, name="mmbench-endo", version="1")
    with pytest.raises(DomainError, match="version"):
        new_release(benchmark, people, version="../etc")


def test_a_failed_build_is_marked_failed_leaves_nothing_and_a_retry_publishes(
    benchmark, people, settings, django_capture_on_commit_callbacks
):
    release = new_release(benchmark, people, withhold_split="test")
    # An image file gone from storage (a broken disk, a half-restored backup).
    stored = Path(settings.MEDIA_ROOT) / Image.objects.order_by("id").first().file.name
    kept = stored.read_bytes()
    stored.unlink()

    release_build_task(release.pk)

    release.refresh_from_db()
    assert release.status == ReleaseStatus.FAILED and "No such file" in release.error
    assert not Path(release.path).exists()
    assert [p.name for p in Path(release.path).parent.iterdir() if ".partial-" in p.name] == []
    assert not ReleaseItem.objects.filter(release=release).exists()

    stored.write_bytes(kept)
    with django_capture_on_commit_callbacks() as callbacks:
        release_retry(release=release)
    assert release.status == ReleaseStatus.QUEUED and len(callbacks) == 1
    release_build_task(release.pk)
    release.refresh_from_db()
    assert release.status == ReleaseStatus.PUBLISHED
    assert list(read_tsv(Path(release.path) / "EndoRelease_test.tsv")["index"]) == [3, 4]
    with pytest.raises(DomainError, match="Only a failed"):
        release_retry(release=release)


def test_the_command_records_a_release_with_a_version_and_filters(benchmark, capsys, settings):
    call_command(
        "export_release", "endo", version="2.0", split=["dev"], dataset_name="EndoDev", verbosity=0
    )
    release = Release.objects.get(name="EndoDev", version="2.0")
    assert release.status == ReleaseStatus.PUBLISHED and release.item_count == 2
    assert release.filters == {"split": ["dev"]}
    assert "exported 2 items" in capsys.readouterr().out
    assert list(read_tsv(Path(release.path) / "EndoDev.tsv")["index"]) == [1, 2]

    with pytest.raises(CommandError, match="already published"):
        call_command("export_release", "endo", version="2.0", dataset_name="EndoDev", verbosity=0)


def test_the_command_writes_the_local_layout_only_on_request(benchmark, settings):
    call_command("export_release", "endo", version="3.0", dataset_name="EndoAll", verbosity=0)
    call_command(
        "export_release",
        "endo",
        version="3.1",
        dataset_name="EndoAll",
        local_layout=True,
        verbosity=0,
    )
    plain, local = (
        Path(r.path) for r in Release.objects.filter(name="EndoAll").order_by("version")
    )
    assert not (plain / "EndoAll_local.tsv").exists()
    frame = read_tsv(local / "EndoAll_local.tsv")
    assert "image" not in frame.columns
    assert all(
        (local / "images" / name).exists() for name in frame["image_path"] if "[" not in name
    )


def test_the_command_keeps_the_plain_snapshot_export(benchmark, tmp_path):
    call_command("export_release", "endo", out=str(tmp_path / "snap"), verbosity=0)
    assert sorted(p.name for p in (tmp_path / "snap").iterdir()) == [
        "README.md",
        "endo.json",
        "endo.tsv",
        "manifest.json",
    ]
    assert not Release.objects.exists()
    with pytest.raises(CommandError, match="--out is required"):
        call_command("export_release", "endo", verbosity=0)


def test_a_damaged_image_file_fails_the_build_with_its_sizes_and_publishes_nothing(
    benchmark, people, settings
):
    release = new_release(benchmark, people)
    stored = Path(settings.MEDIA_ROOT) / Image.objects.order_by("id").first().file.name
    kept = stored.read_bytes()
    stored.write_bytes(kept[:10])  # cut short: no longer the file its hash names
    try:
        release_build_task(release.pk)
    finally:
        stored.write_bytes(kept)  # stored images are shared by the other tests

    release.refresh_from_db()
    assert release.status == ReleaseStatus.FAILED
    assert f"{stored.name} holds 10 bytes, not the {len(kept)}" in release.error
    assert not Path(release.path).exists()


def test_rows_and_progress_are_recorded_at_once_then_at_most_once_a_second(
    benchmark, people, monkeypatch
):
    from annotations.services.releases import build

    release = new_release(benchmark, people)
    items = list(benchmark.items.order_by("source_index").values_list("id", "version")[:4])
    clock = [100.0]
    monkeypatch.setattr(build.time, "monotonic", lambda: clock[0])
    recorder = build._Recorder(release.pk)

    def recorded():
        release.refresh_from_db()
        return ReleaseItem.objects.filter(release=release).count(), release.progress

    recorder(items[:1])
    assert recorded() == (1, 1)  # the first chunk shows at once
    clock[0] += 0.5
    recorder(items[1:2])
    assert recorded() == (1, 1)  # within the second: kept for the next commit
    clock[0] += 0.6
    recorder(items[2:3])
    assert recorded() == (3, 3)
    monkeypatch.setattr(build, "RECORD_ROWS", 1)
    recorder(items[3:])
    assert recorded() == (4, 4)  # enough rows waiting: committed whatever the clock
    recorder.flush()
    assert recorded() == (4, 4)
