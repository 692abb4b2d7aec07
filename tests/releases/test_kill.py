"""A real `export_release` process, killed mid-way, publishes nothing; running it again does."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ITEMS = 3000
# This item's image file becomes a FIFO: the exporter, reading it for that row, waits on it
# mid-way with 1,200 rows written (and hashed), and is killed there.
BLOCKED_AT = 1200


def run(folder: Path, *args: str, **kwargs):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "RELEASES_ROOT": str(folder / "releases"),
        "VAR_DIR": str(folder / "var"),
    }
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=env, **kwargs)


def wait_for_reader(fifo: Path, process: subprocess.Popen) -> int:
    """Block until the export has opened the FIFO for reading; return our write end."""
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.05)


def release_row(folder: Path) -> tuple[str, int]:
    with sqlite3.connect(folder / "db.sqlite3") as db:
        return db.execute("SELECT status, progress FROM annotations_release").fetchone()


def test_a_killed_export_publishes_nothing_and_a_retry_succeeds(tmp_path):
    assert run(tmp_path, "manage.py", "migrate", "-v0").wait() == 0
    assert run(tmp_path, "bench/export.py", "populate", str(tmp_path), str(ITEMS)).wait() == 0
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        (name,) = db.execute(
            "SELECT i.file FROM annotations_image i JOIN annotations_itemimage l ON l.image_id = i.id"
            " JOIN annotations_item t ON t.id = l.item_id WHERE t.source_index = ?",
            (BLOCKED_AT,),
        ).fetchone()
    image = tmp_path / "media" / name
    original = image.read_bytes()
    image.unlink()
    os.mkfifo(image)

    command = ("manage.py", "export_release", "endobench-bench", "--version", "1.0", "-v0")
    exporter = run(tmp_path, *command, stderr=subprocess.PIPE, text=True)
    writer = wait_for_reader(image, exporter)
    exporter.send_signal(signal.SIGKILL)
    exporter.wait()
    os.close(writer)

    parent = tmp_path / "releases" / "endobench-bench"
    assert not (parent / "1.0").exists()
    assert [p.name for p in parent.iterdir() if not p.name.startswith(".")] == []
    partial = [p for p in parent.iterdir() if ".partial-" in p.name]
    assert partial and (partial[0] / "endobench-bench.tsv").stat().st_size > 0  # killed mid-way
    status, progress = release_row(tmp_path)
    assert status == "building" and 0 < progress < ITEMS

    image.unlink()
    image.write_bytes(original)
    retry = run(tmp_path, *command, stdout=subprocess.PIPE, text=True)
    assert retry.wait() == 0
    assert f"exported {ITEMS} items" in retry.stdout.read()
    assert release_row(tmp_path) == ("published", ITEMS)
    assert not [p for p in parent.iterdir() if ".partial-" in p.name]  # swept by the retry
    manifest = json.loads((parent / "1.0" / "manifest.json").read_text())
    tsv = (parent / "1.0" / "endobench-bench.tsv").read_bytes()
    assert manifest["files"]["endobench-bench.tsv"]["md5"] == hashlib.md5(tsv).hexdigest()
    assert manifest["items"] == ITEMS
