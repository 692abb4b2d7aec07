"""Releases are byte-identical to those the first exporter wrote (see `reference.py`)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from annotations.models import Benchmark
from annotations.services.releases import release_build, release_create, release_export
from tests.factories import make_personas
from tests.releases.reference import (
    HASHES,
    RELEASES,
    SNAPSHOTS,
    build_benchmarks,
    folder_hashes,
)

RECORD = os.environ.get("RECORD_RELEASE_REFERENCE") == "1"


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_every_release_file_is_byte_identical_to_the_reference(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    build_benchmarks(make_personas())
    found = {}
    for name, bench, create, build in RELEASES:
        release = release_create(
            benchmark=Benchmark.objects.get(name=bench),
            name=name,
            version="1.0",
            path=tmp_path / "releases" / name,
            **create,
        )
        release = release_build(release=release, **build)
        assert release.status == "published", release.error
        folder = tmp_path / "releases" / name
        manifest = json.loads((folder / "manifest.json").read_text())
        for file_name, digests in manifest["files"].items():
            data = (folder / file_name).read_bytes()
            assert digests["md5"] == hashlib.md5(data).hexdigest(), file_name
            assert digests["sha256"] == hashlib.sha256(data).hexdigest(), file_name
        found[name] = folder_hashes(folder)
    for folder_name, bench, include_all in SNAPSHOTS:
        folder = tmp_path / folder_name
        release_export(
            benchmark=Benchmark.objects.get(name=bench), out_dir=folder, include_all=include_all
        )
        found[folder_name] = folder_hashes(folder)
    if RECORD:
        HASHES.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    expected = json.loads(HASHES.read_text())
    assert found.keys() == expected.keys()
    for name in expected:
        assert found[name] == expected[name], name
