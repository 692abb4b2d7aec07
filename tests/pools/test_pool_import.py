"""A pool imported from EndoBench's JSON: marked as a pool, its count kept, each image file read
and stored once however many questions share it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.formats import EndoBenchJsonReader
from annotations.models import Benchmark, Image, ItemImage
from tests.pools.world import textured_jpeg

pytestmark = pytest.mark.django_db


def write_pool(folder: Path, items: int, images: int) -> Path:
    (folder / "EndoBench-Images").mkdir(parents=True)
    for number in range(images):
        (folder / "EndoBench-Images" / f"{number}.jpg").write_bytes(textured_jpeg(number))
    rows = [
        {
            "id": n + 1,
            "question": f"Question {n // images} about this frame?",
            "options": ["a", "b", "c", "d"],
            "answer": "ABCD"[n % 4],
            "scene": "colonoscopy",
            "task": "landmark",
            "image_path": f"{n % images}.jpg",
        }
        for n in range(items)
    ]
    path = folder / "pool.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_the_reader_reads_a_shared_image_once_and_reuses_it_by_index(tmp_path, monkeypatch):
    path = write_pool(tmp_path, items=12, images=3)
    reads: list[Path] = []
    original = Path.read_bytes

    def counting(self):
        reads.append(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    rows = list(EndoBenchJsonReader(path))
    assert len(rows) == 12 and len(reads) == 3
    assert [row.image_ref for row in rows[:3]] == [None, None, None]
    assert [row.image_ref for row in rows[3:6]] == [1, 2, 3]
    assert rows[4].images == [] and rows[4].image_paths == ["1.jpg"]


def test_a_pool_import_stores_each_image_once_and_keeps_its_count(tmp_path):
    path = write_pool(tmp_path, items=40, images=5)
    call_command(
        "import_benchmark",
        str(path),
        "--family",
        "endobench",
        "--name",
        "pool",
        "--pool",
        "-v",
        "0",
    )
    pool = Benchmark.objects.get(name="pool")
    assert pool.is_pool and pool.item_count == 40
    assert Image.objects.count() == 5
    links = ItemImage.objects.filter(item__benchmark=pool)
    assert links.count() == 40 and links.values("image_id").distinct().count() == 5
    # Every question points at the file its row named (reused by index, not by accident).
    for link in links.select_related("item", "image"):
        number = int(link.item.extra["image_path"].split(".")[0])
        assert link.image.sha256 == hashlib.sha256(textured_jpeg(number)).hexdigest()
