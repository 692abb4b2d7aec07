"""Release export throughput and memory (budgets: ≥ 50% of plain base64's speed; peak RSS at 50k
items within 1.2× of that at 5k).

Run: ``.venv/bin/python bench/export.py [--sizes 5000,50000] [--rounds 3]``. For each size, a
fresh SQLite database gets N curated items, each with its own 256×256 JPEG (q90) stored as the app
stores images. A fresh subprocess (DEBUG off, as deployed) then alternates, `rounds` times, (1) the
baseline: base64-encoding the same image bytes, file by file, into one output file, and (2) a full
release build (NAME.tsv, NAME.json with provenance, NAME_coco.json, manifest with md5/sha256 of
every file, ReleaseItem rows; below 1 GB no parts and no NAME_local.tsv, as VLMEvalKit). Every run
starts after `sync` and writes new files, so none pays for another's write-back. It prints the
median of each, their ratio, every round with the CPU time of the exporting process and of its
digest worker, and the process's peak RSS (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATIO_BUDGET = 0.5
RSS_BUDGET = 1.2
POOL = 400  # genuinely different pictures; each item's file is made unique by a JPEG comment


def _env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "RELEASES_ROOT": str(folder / "releases"),
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
        # As deployed: with DEBUG on, Django also records every query it runs.
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-not-a-secret",
    }


def _setup_django(folder: Path) -> None:
    os.environ.update(_env(folder))
    import django

    django.setup()


def _pictures(seed: int = 7) -> list[bytes]:
    """Endoscopy-like frames: a warm vignette with smooth texture and a little noise."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:256, 0:256] / 255.0
    pictures = []
    for _ in range(POOL):
        cx, cy = rng.uniform(0.3, 0.7, 2)
        r = np.hypot(x - cx, y - cy)
        base = np.clip(1.1 - 1.4 * r, 0, 1)
        waves = (
            0.12
            * np.sin(rng.uniform(5, 25) * x + rng.uniform(0, 6))
            * np.cos(rng.uniform(5, 25) * y)
        )
        noise = rng.normal(0, 0.05, (256, 256))
        light = np.clip(base + waves + noise, 0, 1)
        rgb = np.stack([light * 235, light * rng.uniform(90, 150), light * 80], axis=-1)
        buffer = io.BytesIO()
        Image.fromarray(rgb.astype("uint8")).save(buffer, format="JPEG", quality=90)
        pictures.append(buffer.getvalue())
    return pictures


def _unique(picture: bytes, number: int) -> bytes:
    # A COM segment right after SOI: a valid, distinct JPEG file showing the same picture.
    comment = f"clinreview bench frame {number}".encode()
    return picture[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + picture[2:]


def populate(folder: Path, count: int) -> None:
    """Fill the database with `count` agreed items, one distinct JPEG each (bulk, no services)."""
    _setup_django(folder)
    import hashlib

    from annotations.models import Benchmark, Image, Item, ItemImage, ItemRevision

    benchmark = Benchmark.objects.create(
        name="endobench-bench",
        family="endobench",
        columns=[
            "index",
            "image",
            "question",
            "category",
            "task",
            "scene",
            "answer",
            "A",
            "B",
            "C",
            "D",
        ],
        option_letters=["A", "B", "C", "D"],
    )
    pictures = _pictures()
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
                Image(
                    sha256=digest,
                    file=name,
                    format="JPEG",
                    width=256,
                    height=256,
                    size_bytes=len(data),
                )
            )
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


def _children_cpu() -> float:
    """CPU seconds of this process's finished children: the export's digest worker."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def measure(folder: Path, rounds: int) -> None:
    """In a fresh process: `rounds` times the baseline then a full release build, alternating, so
    that both see the same machine; print the numbers as JSON."""
    _setup_django(folder)
    from annotations.models import Benchmark, Image
    from annotations.services.releases import release_build, release_create

    media = Path(os.environ["MEDIA_ROOT"])
    # Plain strings: a list of Path objects (tens of thousands of them) would weigh on the
    # measured export, which runs in this process: every full garbage collection scans them,
    # and they grow the peak RSS with N.
    paths = [
        os.path.join(media, name)
        for name in Image.objects.order_by("id").values_list("file", flat=True)
    ]
    for path in paths:  # the same warm page cache for both runs
        _read(path)
    image_bytes = sum(os.path.getsize(path) for path in paths)
    benchmark = Benchmark.objects.get()
    baselines, exports, cpu = [], [], []
    for number in range(rounds):
        # Each run starts with nothing left to write back: none pays for another's (or the
        # populating step's) dirty pages, which the kernel would flush while it writes.
        os.sync()
        started = time.perf_counter()
        with open(folder / "baseline.b64", "wb") as out:
            for path in paths:
                out.write(base64.b64encode(_read(path)))
                out.write(b"\n")
        baselines.append(time.perf_counter() - started)
        (folder / "baseline.b64").unlink()
        os.sync()

        release = release_create(benchmark=benchmark, name="EndoBenchBench", version=f"1.{number}")
        started, own, worker = time.perf_counter(), time.process_time(), _children_cpu()
        release = release_build(release=release)
        exports.append(time.perf_counter() - started)
        cpu.append((time.process_time() - own, _children_cpu() - worker))
        tsv_bytes = (Path(release.path) / "EndoBenchBench.tsv").stat().st_size
        items = release.item_count
        shutil.rmtree(release.path)  # the next round writes its files anew, as the baseline does
    result = {
        "items": items,
        "image_bytes": image_bytes,
        "tsv_bytes": tsv_bytes,
        "baseline_s": baselines,
        "export_s": exports,
        "export_cpu_s": cpu,
        "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    print(json.dumps(result))


def _run(mode: str, folder: Path, *extra: str) -> str:
    command = [sys.executable, __file__, mode, str(folder), *extra]
    done = subprocess.run(command, cwd=ROOT, env=_env(folder), capture_output=True, text=True)
    if done.returncode:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"{mode} failed")
    return done.stdout


def one_size(template: Path, count: int, rounds: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"clinreview-export-{count}-"))
    try:
        shutil.copy(template, folder / "db.sqlite3")
        _run("populate", folder, str(count))
        return json.loads(_run("measure", folder, str(rounds)).strip().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(result: dict) -> float:
    items = result["items"]
    seconds, baseline = median(result["export_s"]), median(result["baseline_s"])
    ratio = baseline / seconds
    print(
        f"{items:>7} items  export {seconds:6.2f} s  {items / seconds:8.0f} items/s  "
        f"{result['image_bytes'] / seconds / 1e6:7.1f} MB/s of images  "
        f"{result['tsv_bytes'] / seconds / 1e6:7.1f} MB/s of TSV  |  base64 baseline "
        f"{baseline:6.2f} s  ratio {ratio:4.2f} (budget ≥ {RATIO_BUDGET})  |  "
        f"peak RSS {result['maxrss_kb'] / 1024:6.1f} MiB"
    )
    spread = ", ".join(
        f"{b:.2f}/{e:.2f}" for b, e in zip(result["baseline_s"], result["export_s"], strict=True)
    )
    print(f"{'':>7}        rounds (baseline/export s, medians above): {spread}")
    # CPU of the exporting process and of its digest worker, per round: a round whose wall time
    # is well above both was waiting on the disk, not working.
    cpu = ", ".join(f"{own:.2f}+{worker:.2f}" for own, worker in result["export_cpu_s"])
    print(f"{'':>7}        export CPU per round (exporter+worker s): {cpu}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument(
        "--rounds", type=int, default=3, help="baseline/export pairs per size (medians compared)"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="clinreview-export-db-") as scratch:
        template = Path(scratch)
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env=_env(template),
            check=True,
        )
        results = [one_size(template / "db.sqlite3", size, args.rounds) for size in sizes]
    ratios = [report(result) for result in results]
    ok = min(ratios) >= RATIO_BUDGET
    if len(results) > 1:
        growth = results[-1]["maxrss_kb"] / results[0]["maxrss_kb"]
        ok = ok and growth <= RSS_BUDGET
        print(
            f"peak RSS {results[-1]['items']} items / {results[0]['items']} items: "
            f"{growth:.2f}× (budget ≤ {RSS_BUDGET}×)"
        )
    print("within budget" if ok else "OVER BUDGET")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] in ("populate", "measure"):
        folder = Path(sys.argv[2])
        if sys.argv[1] == "populate":
            populate(folder, int(sys.argv[3]))
        else:
            measure(folder, int(sys.argv[3]))
    else:
        main()
