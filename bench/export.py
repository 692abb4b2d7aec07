"""Release export time against the real limit, start-up included, and its memory.

Run: ``.venv/bin/python bench/export.py [--sizes 2000,5000,50000] [--rounds 3]``.

For each size, a fresh SQLite database gets N curated items, one 1024×768 JPEG frame each
(about 60 KB). Generating a frame takes about a second here, so `POOL` distinct pictures are drawn
and each item's file is made distinct by a JPEG comment (its own bytes and sha256, nothing reused
by the release). Then, `rounds` times, alternating on the same warm page cache:

- the limit: pybase64 + write + md5 of the same image bytes, in this process, into one file;
- the export: ``manage.py export_release NAME --version V --part-bytes 0`` in a fresh process
  (DEBUG off, as deployed), start-up included: NAME.tsv, NAME.json with provenance,
  NAME_coco.json, manifest.json with md5 and sha256 of every file, ReleaseItem rows.
  ``--part-bytes 0``: one NAME.tsv like the limit's one file, whatever its size (past 1 GB a
  release also writes parts and the local layout, i.e. its bytes twice; see `--default-layout`).

It prints the medians, their ratio (goals: ≤ 3× at 2,000 frames, ≤ 1.5× at 50,000) and the
export process's peak RSS (goal: at 50,000 items within 1.2× of 5,000).
``populate FOLDER N [WxH]`` only fills a database (tests/releases/test_kill.py uses it).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POOL = 16  # distinct pictures; every item's file is made distinct by a JPEG comment
GOALS = {2000: 3.0, 50000: 1.5}
RSS_GOAL = 1.2
NAME = "endobench-bench"


def _env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "RELEASES_ROOT": str(folder / "releases"),
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
        "DEBUG": "0",  # as deployed: with DEBUG on, Django also records every query
        "SECRET_KEY": "bench-only-not-a-secret",
    }


def _pictures(width: int, height: int, seed: int = 7) -> list[bytes]:
    """Endoscopy-like frames: a warm vignette with smooth texture and a little noise."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(width, height)
    pictures = []
    for _ in range(POOL):
        cx, cy = rng.uniform(0.3, 0.7, 2)
        base = np.clip(1.1 - 1.4 * np.hypot(x - cx, y - cy), 0, 1)
        waves = 0.12 * np.sin(rng.uniform(5, 25) * x + rng.uniform(0, 6))
        waves = waves * np.cos(rng.uniform(5, 25) * y)
        light = np.clip(base + waves + rng.normal(0, 0.015, (height, width)), 0, 1)
        rgb = np.stack([light * 235, light * rng.uniform(90, 150), light * 80], axis=-1)
        buffer = io.BytesIO()
        Image.fromarray(rgb.astype("uint8")).save(buffer, format="JPEG", quality=85)
        pictures.append(buffer.getvalue())
    return pictures


def _unique(picture: bytes, number: int) -> bytes:
    # A COM segment right after SOI: a valid, distinct JPEG file showing the same picture.
    comment = f"clinreview bench frame {number}".encode()
    return picture[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + picture[2:]


def populate(folder: Path, count: int, width: int = 256, height: int = 256) -> None:
    """Fill the database with `count` agreed items, one distinct JPEG each (bulk, no services)."""
    os.environ.update(_env(folder))
    import django

    django.setup()
    from annotations.models import Benchmark, Image, Item, ItemImage, ItemRevision

    columns = ["index", "image", "question", "category", "task", "scene", "answer"]
    benchmark = Benchmark.objects.create(
        name=NAME, family="endobench", columns=[*columns, "A", "B", "C", "D"],
        option_letters=["A", "B", "C", "D"],
    )  # fmt: skip
    pictures = _pictures(width, height)
    rng = random.Random(3)
    media = Path(os.environ["MEDIA_ROOT"])
    for start in range(0, count, 5000):
        numbers = range(start, min(count, start + 5000))
        images = []
        for number in numbers:
            data = _unique(pictures[number % POOL], number)
            digest = hashlib.sha256(data).hexdigest()
            name = f"images/{digest[:2]}/{digest[2:4]}/{digest}.jpg"
            (media / name).parent.mkdir(parents=True, exist_ok=True)
            (media / name).write_bytes(data)
            images.append(
                Image(sha256=digest, file=name, format="JPEG", width=width, height=height,
                      size_bytes=len(data))
            )  # fmt: skip
        images = Image.objects.bulk_create(images)
        items = Item.objects.bulk_create(
            Item(
                benchmark=benchmark,
                source_index=number + 1,
                question=f"Which landmark is shown in frame {number}?",
                options=["Cecum", "Pylorus", "Z-line", "Duodenal bulb"],
                answer="ABCD"[rng.randrange(4)],
                category=rng.choice(["Landmark", "Lesion", "Quantification", "Surgery"]),
                task=f"task-{rng.randrange(12)}",
                scene=rng.choice(["gastroscopy", "colonoscopy", "capsule", "surgery"]),
                split=rng.choice(["dev", "test"]),
                status="agreed",
            )
            for number in numbers
        )
        ItemImage.objects.bulk_create(
            ItemImage(item=item, image=image, position=0)
            for item, image in zip(items, images, strict=True)
        )
        ItemRevision.objects.bulk_create(
            ItemRevision(item=item, version=1, content=item.content(), reason="imported")
            for item in items
        )


def limit(paths: list[str], out: Path) -> tuple[float, float]:
    """(wall, CPU seconds) of pybase64 + write + md5 of the image files, into one file: the
    floor of any export."""
    from pybase64 import b64encode

    started, cpu = time.perf_counter(), time.process_time()
    md5 = hashlib.md5()
    with open(out, "wb") as handle:
        for path in paths:
            with open(path, "rb") as image:
                data = b64encode(image.read())
            handle.write(data)
            md5.update(data)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    out.unlink()
    return elapsed, cpu


def export(folder: Path, version: str, *extra: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KiB) of one `export_release` process."""
    command = [sys.executable, "manage.py", "export_release", NAME, "--version", version, "-v0"]
    started = time.perf_counter()
    process = subprocess.Popen([*command, *extra], cwd=ROOT, env=_env(folder))
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"export_release failed with status {process.returncode}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def one_size(template: Path, count: int, rounds: int, default_layout: bool) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"clinreview-export-{count}-"))
    try:
        shutil.copy(template, folder / "db.sqlite3")
        command = [sys.executable, __file__, "populate", str(folder), str(count), "1024x768"]
        subprocess.run(command, cwd=ROOT, env=_env(folder), check=True)
        media = folder / "media"
        paths = sorted(str(path) for path in media.rglob("*.jpg"))
        image_bytes = sum(os.path.getsize(path) for path in paths)
        limits, exports, rss = [], [], []
        for number in range(rounds):
            os.sync()  # no round pays for another's write-back
            limits.append(limit(paths, folder / "limit.b64"))
            os.sync()
            *seconds, peak = export(folder, f"1.{number}", "--part-bytes", "0")
            exports.append(seconds)
            rss.append(peak)
            shutil.rmtree(folder / "releases" / NAME / f"1.{number}")
        result = {"items": count, "image_bytes": image_bytes, "limit_s": limits}
        result |= {"export_s": exports, "maxrss_kb": max(rss)}
        if default_layout:
            os.sync()
            result["default_s"] = export(folder, "2.0")[0]
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(result: dict) -> None:
    """Medians of wall time and of CPU time (user + system: what a busy machine does not blur)."""
    items, goal = result["items"], GOALS.get(result["items"])
    wall, cpu = (median(e[i] for e in result["export_s"]) for i in (0, 1))
    floor, floor_cpu = (median(b[i] for b in result["limit_s"]) for i in (0, 1))
    print(
        f"{items:>6} frames ({result['image_bytes'] / 1e6:,.0f} MB of JPEG): export {wall:6.2f} s "
        f"(CPU {cpu:5.2f} s), pybase64+write+md5 {floor:6.2f} s (CPU {floor_cpu:5.2f} s), ratio "
        f"{wall / floor:5.2f}× (CPU {cpu / floor_cpu:5.2f}×)"
        + (f", goal ≤ {goal}×" if goal else "")
        + f"; export peak RSS {result['maxrss_kb'] / 1024:6.1f} MiB"
    )
    rounds = ", ".join(
        f"{e[0]:.2f}/{b[0]:.2f}" for e, b in zip(result["export_s"], result["limit_s"], strict=True)
    )
    print(f"{'':>6}        rounds (export/limit wall s): {rounds}; load {os.getloadavg()[0]:.1f}")
    if "default_s" in result:
        print(f"{'':>6}        default layout (parts + local layout past 1 GB): "
              f"{result['default_s']:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,5000,50000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--default-layout", action="store_true", help="also time one export with the default parts"
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="clinreview-export-db-") as scratch:
        template = Path(scratch)
        migrate = [sys.executable, "manage.py", "migrate", "-v0"]
        subprocess.run(migrate, cwd=ROOT, env=_env(template), check=True)
        results = []
        for size in sizes:
            results.append(
                one_size(template / "db.sqlite3", size, args.rounds, args.default_layout)
            )
            report(results[-1])
    by_size = {result["items"]: result for result in results}
    if 5000 in by_size and 50000 in by_size:
        growth = by_size[50000]["maxrss_kb"] / by_size[5000]["maxrss_kb"]
        print(f"peak RSS 50,000 / 5,000 frames: {growth:.2f}× (goal ≤ {RSS_GOAL}×)")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "populate":
        size = [int(n) for n in sys.argv[4].split("x")] if len(sys.argv) > 4 else [256, 256]
        populate(Path(sys.argv[2]), int(sys.argv[3]), *size)
    else:
        main()
