"""Triage of 100k items with three model runs, in a temporary SQLite database.

Run: ``.venv/bin/python bench/triage.py [--items 100000] [--image-size 48] [--workers 2]``. Rows
are bulk-created (one shared image per ~10 items, three runs of ~80% accuracy, a few planted
duplicates and breakages). The baseline, measured in the same run, is a plain `values_list` scan
of the same items' columns (the least any triage must read); the budget is "minutes, not hours".

Hashing the images is the part that grows with real frames (a 256 x 256 PNG takes ~17 ms, a
48 x 48 JPEG under 1 ms): with `--workers N` the triage also runs as a background job on 1 and
then N real Celery worker processes (file-system broker, JOB_TRIAGE_CHUNK images per chunk), the
image hashes forgotten before each, and the job's wall time is printed for both.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
TMP = tempfile.mkdtemp(prefix="clinreview-bench-triage-")
os.environ["VAR_DIR"] = TMP
os.environ["DATABASE_URL"] = f"sqlite:///{TMP}/bench.sqlite3"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.core.files.storage import default_storage  # noqa: E402
from django.core.management import call_command  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from annotations.models import (  # noqa: E402
    Benchmark,
    Image,
    ImageHash,
    Item,
    ItemImage,
    Job,
    Prediction,
    Run,
)
from annotations.services.triage import benchmark_triage, triage_schedule  # noqa: E402

LETTERS = "ABCD"
BATCH = 5000


def texture(seed: int, size: int) -> bytes:
    """48 px: a tiny JPEG (the bench's first figures); larger: a PNG frame, as twins are."""
    pixels = (np.random.default_rng(seed).random((6, 6, 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    image = PILImage.fromarray(pixels).resize((size, size), PILImage.BICUBIC)
    image.save(buffer, "JPEG" if size <= 48 else "PNG")
    return buffer.getvalue()


def make_images(count: int, size: int) -> list[Image]:
    rows = []
    kind, extension = ("JPEG", "jpg") if size <= 48 else ("PNG", "png")
    for number in range(count):
        data = texture(number, size)
        sha = f"{number:064x}"
        name = f"images/{sha[:2]}/{sha[2:4]}/{sha}.{extension}"
        default_storage.save(name, io.BytesIO(data))
        rows.append(Image(sha256=sha, file=name, format=kind, width=size, height=size,
                          size_bytes=len(data)))  # fmt: skip
    return Image.objects.bulk_create(rows, batch_size=BATCH)


def make_items(benchmark: Benchmark, count: int, images: list[Image]) -> list[tuple[int, str]]:
    rng = random.Random(1)
    rows = []
    for index in range(count):
        answer = rng.choice(LETTERS)
        options = [f"finding {rng.randrange(40)} {k}" for k in range(4)]
        rows.append(
            Item(
                benchmark=benchmark,
                source_index=index,
                answer=answer,
                options=options,
                question=f"Case {index}: which finding is shown in this frame?",
                task=f"task{index % 12}",
                split="test" if (index // 10) % 5 == 0 else "dev",
                extra={"gt": options[LETTERS.index(answer)]},
            )  # fmt: skip
        )
    rows[3].answer = "F"  # a few planted breakages
    rows[4].options = ["NA", *rows[4].options[1:]]
    created = Item.objects.bulk_create(rows, batch_size=BATCH)
    ItemImage.objects.bulk_create(
        [ItemImage(item=item, image=images[i // 10], position=0) for i, item in enumerate(created)],
        batch_size=BATCH,
    )
    return [(item.pk, item.answer) for item in created]


def make_runs(benchmark: Benchmark, items: list[tuple[int, str]]) -> None:
    for number in range(3):
        run = Run.objects.create(benchmark=benchmark, kind="model", label=f"model-{number}",
                                 status="done", total=len(items))  # fmt: skip
        rng = random.Random(number)
        rows = []
        for pk, answer in items:
            letter = answer if rng.random() < 0.8 else rng.choice(LETTERS)
            rows.append(Prediction(run=run, item_id=pk, extracted=letter, hit=letter == answer))
        Prediction.objects.bulk_create(rows, batch_size=BATCH)


def baseline_scan(benchmark: Benchmark) -> float:
    started = time.perf_counter()
    columns = ("pk", "source_index", "question", "options", "answer", "split", "task")
    rows = Item.objects.filter(benchmark=benchmark).values_list(*columns, "extra__gt")
    sum(1 for _row in rows.iterator(chunk_size=2000))
    return time.perf_counter() - started


def start_workers(count: int, chunk: int) -> list[subprocess.Popen]:
    """`count` worker processes (one task at a time each) on this bench's database and broker,
    returned once each has said it is ready."""
    env = {**os.environ, "JOB_TRIAGE_CHUNK": str(chunk)}
    workers = []
    for number in range(count):
        log = open(f"{TMP}/worker-{number}.log", "w")  # noqa: SIM115 (closed with the process)
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "clinreview", "worker", "--loglevel=info",
             "--concurrency", "1", "-n", f"bench{number}@%h", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "-Q", "clinreview"],
            cwd=Path(__file__).resolve().parents[1], env=env, stdout=log, stderr=log,
        ))  # fmt: skip
    for number in range(count):
        while "ready." not in Path(f"{TMP}/worker-{number}.log").read_text():
            time.sleep(0.2)
    return workers


def job_on_workers(benchmark: Benchmark, count: int, chunk: int) -> float:
    """Wall time of a triage job (image hashes forgotten first) on `count` workers."""
    ImageHash.objects.all().delete()
    workers = start_workers(count, chunk)
    try:
        started = time.perf_counter()
        job = triage_schedule(benchmark_id=benchmark.pk)
        while Job.objects.filter(pk=job.pk, status__in=("queued", "running")).exists():
            time.sleep(0.2)
        took = time.perf_counter() - started
        job.refresh_from_db()
        assert job.status == "done", job.message
        return took
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--image-size", type=int, default=48, help="pixels; 48 = tiny JPEGs")
    parser.add_argument("--workers", type=int, default=0, help="also time the job on N workers")
    parser.add_argument("--chunk", type=int, default=500, help="images per chunk (--workers)")
    arguments = parser.parse_args()
    count = arguments.items
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    benchmark = Benchmark.objects.create(name="bench-triage", family="endobench")
    images = make_images(max(1, count // 10), arguments.image_size)
    items = make_items(benchmark, count, images)
    make_runs(benchmark, items)
    print(f"set-up: {count:,} items, {len(images):,} images, 3 runs "
          f"in {time.perf_counter() - started:.1f} s ({TMP})")  # fmt: skip
    baseline = baseline_scan(benchmark)
    started = time.perf_counter()
    result = benchmark_triage(benchmark=benchmark)
    first = time.perf_counter() - started
    started = time.perf_counter()
    benchmark_triage(benchmark=benchmark)  # image hashes are cached now
    again = time.perf_counter() - started
    print(f"baseline values_list scan   {baseline:8.2f} s")
    print(f"triage (hashing images)     {first:8.2f} s   {first / baseline:6.1f}× baseline")
    print(f"triage again (hashes kept)  {again:8.2f} s   {again / baseline:6.1f}× baseline")
    print(f"{len(result.suspects):,} suspects; by reason: "
          + ", ".join(f"{k}={v}" for k, v in result.summary["by_code"].items() if v))  # fmt: skip
    verdict = "within" if first < 600 else "OVER"
    print(f"budget (minutes, not hours): {verdict} ({first / 60:.1f} min)")
    if arguments.workers:
        one = job_on_workers(benchmark, 1, arguments.chunk)
        many = job_on_workers(benchmark, arguments.workers, arguments.chunk)
        print(f"job on 1 worker             {one:8.2f} s   {one / baseline:6.1f}× baseline")
        print(f"job on {arguments.workers} workers            {many:8.2f} s   "
              f"{many / baseline:6.1f}× baseline; {one / many:.2f}× faster")  # fmt: skip
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
