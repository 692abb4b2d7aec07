"""A pool at its real size: import 500,000 EndoBench items over 20,000 images, draw 7,000.

Budgets (DESIGN.md, Pools): the import within 5x the limit of the same work, its peak memory
flat in the pool's size; a 7,000-item draw with quotas over 12 strata in 10 s or less.

Run: ``.venv/bin/python bench/pool.py [--items 500000] [--images 20000] [--draw 7000]``.
It writes an EndoBench JSON of N items over M distinct small JPEG frames (4 scenes x 3 tasks:
12 strata), then measures, each in a subprocess on a fresh SQLite database and media folder:
(1) the limit: ``json.load`` of the file, read + sha256 + write of each distinct image, and
the same rows (items, their image links, their first revisions) inserted with a bare
``executemany`` in one transaction; (2) the real command, ``manage.py import_benchmark FILE
--family endobench --pool``; (3) the same command on a tenth of the pool, for the memory's
growth; (4) ``manage.py draw_benchmark`` with a quota file over the 12 strata. It prints each
time, the ratios, the peak RSS (``ru_maxrss`` of each child) and the machine's load.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
IMPORT_RATIO_BUDGET = 5.0
DRAW_BUDGET_SECONDS = 10.0
SCENES = ("Colonoscopy", "Gastroscopy", "Capsule endoscopy", "Surgery")
TASKS = ("Landmark identification", "Lesion classification", "Instrument recognition")
QUESTIONS = (
    "Which anatomical landmark is visible in this endoscopic image?",
    "What type of lesion is most likely shown in this image?",
    "Which surgical instrument can be seen in this frame?",
    "Is there any abnormality visible in the mucosa of this image?",
    "What is the most likely diagnosis for the finding in this image?",
)


def _env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "RELEASES_ROOT": str(folder / "releases"),
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-not-a-secret",
    }


def _frame(number: int, base: bytes) -> bytes:
    data = bytearray(base)
    table = data.index(b"\xff\xdb") + 5  # the first quantisation table: other pixels, valid
    data[table + 63] = 1 + number % 250
    data[table + 62] = 1 + number // 250 % 250
    return bytes(data)


def write_pool(folder: Path, items: int, images: int) -> Path:
    """The JSON and its image folder; items spread over the images, scenes and tasks."""
    pictures = folder / "EndoBench-Images"
    pictures.mkdir(parents=True)
    buffer = io.BytesIO()
    Image.linear_gradient("L").resize((96, 72)).convert("RGB").save(buffer, "JPEG", quality=80)
    for number in range(images):
        (pictures / f"{number:06d}.jpg").write_bytes(_frame(number, buffer.getvalue()))
    path = folder / "pool.json"
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        for number in range(items):
            image = number % images
            stratum = image % (len(SCENES) * len(TASKS))
            scene, task = SCENES[stratum // len(TASKS)], TASKS[stratum % len(TASKS)]
            item = {
                "id": number + 1,
                "question": f"{QUESTIONS[number // images % len(QUESTIONS)]} (variant {number // images // len(QUESTIONS)})",
                "options": ["Pylorus", "Cecum", "Z-line", "Duodenal bulb", "Retroflex rectum"],
                "answer": "ABCDE"[number % 7 % 5],
                "gt": "Cecum",
                "category": "Anatomy" if image % 2 else "Lesion",
                "task": task,
                "subtask": f"{task} (subtask {number % 3})",
                "scene": scene,
                "dataset": f"Dataset-{image % 21}",
                "image_path": f"{image:06d}.jpg",
            }
            out.write(json.dumps(item) + (",\n" if number + 1 < items else "\n"))
        out.write("]\n")
    return path


def _template(folder: Path) -> Path:
    folder.mkdir()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=_env(folder),
        check=True,
    )
    return folder / "db.sqlite3"


def _fresh(folder: Path, template: Path) -> Path:
    folder.mkdir()
    shutil.copy(template, folder / "db.sqlite3")
    return folder


def _run(command: list[str], folder: Path) -> str:
    """The child's stdout; exits when the child fails."""
    process = subprocess.run(command, cwd=ROOT, env=_env(folder), capture_output=True, check=False)
    if process.returncode:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{process.stderr.decode()[-2000:]}")
    return process.stdout.decode()


def _measured(command: list[str], folder: Path) -> tuple[float, int, str]:
    """Run `command` as the only child of a fresh helper process, so that the helper's
    RUSAGE_CHILDREN peak RSS is the command's own."""
    wrapper = [sys.executable, str(Path(__file__)), "--child", json.dumps(command)]
    report = json.loads(_run(wrapper, folder).strip().splitlines()[-1])
    return report["seconds"], report["peak_kib"], report["out"]


def _child(command: list[str]) -> None:
    """Run the command, then print its wall time, peak RSS and output as one JSON line."""
    import resource

    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.stderr.write(done.stderr.decode())
        raise SystemExit(done.returncode)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_kib": peak, "out": done.stdout.decode()}))


def limit(path: Path, folder: Path) -> None:
    """The limit of the import's work: parse, read + sha256 + write the distinct images, insert
    the same rows with a bare executemany in one transaction. Runs in its own process."""
    images_folder = path.parent / "EndoBench-Images"
    media = folder / "media"
    media.mkdir(parents=True, exist_ok=True)
    with open(path, encoding="utf-8") as handle:
        items = json.load(handle)
    digests: dict[str, str] = {}
    for item in items:
        name = item["image_path"]
        if name not in digests:
            data = (images_folder / name).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            (media / f"{digest}.jpg").write_bytes(data)
            digests[name] = digest
    db = sqlite3.connect(folder / "db.sqlite3", isolation_level=None)
    now = datetime.now(UTC).isoformat()
    db.execute("BEGIN")
    db.execute(
        "INSERT INTO annotations_benchmark (name, family, description, taxonomy, columns, "
        "option_letters, label_sets, pairs_blinded, is_pool, item_count, created_at) "
        "VALUES ('limit', 'endobench', '', '{}', '[]', '[]', '{}', 0, 1, 0, ?)",
        [now],
    )
    image_ids = {}
    for number, digest in enumerate(dict.fromkeys(digests.values()), start=1):
        db.execute(
            "INSERT INTO annotations_image (id, sha256, file, format, width, height, size_bytes, "
            "created_at) VALUES (?, ?, ?, 'JPEG', 96, 72, 0, ?)",
            [number, digest, f"images/{digest}.jpg", now],
        )
        image_ids[digest] = number
    columns = (
        "id, benchmark_id, source_index, question, hint, options, kind, answer, reference, "
        "category, l2_category, split, task, subtask, scene, dataset, modality, source, extra, "
        "degradation_type, degradation_severity, status, version, created_at, updated_at"
    )
    db.executemany(
        f"INSERT INTO annotations_item ({columns}) VALUES ({', '.join('?' * 25)})",
        (
            (
                n, 1, item["id"], item["question"], "", json.dumps(item["options"]), "mcq",
                item["answer"], "", item["category"], "", "", item["task"], item["subtask"],
                item["scene"], item["dataset"], "", "",
                json.dumps({"gt": item["gt"], "image_path": item["image_path"]}),
                "", "", "pending", 1, now, now,
            )
            for n, item in enumerate(items, start=1)
        ),
    )  # fmt: skip
    db.executemany(
        "INSERT INTO annotations_itemimage (item_id, image_id, position) VALUES (?, ?, 0)",
        ((n, image_ids[digests[item["image_path"]]]) for n, item in enumerate(items, start=1)),
    )
    db.executemany(
        "INSERT INTO annotations_itemrevision (item_id, version, content, reason, note, "
        "created_at) VALUES (?, 1, ?, 'imported', '', ?)",
        (
            (
                n,
                json.dumps(
                    {"question": item["question"], "hint": "", "options": item["options"],
                     "answer": item["answer"]}
                ),
                now,
            )
            for n, item in enumerate(items, start=1)
        ),
    )  # fmt: skip
    db.execute("COMMIT")


def _quota_file(folder: Path, total: int) -> Path:
    strata = [(scene, task) for scene in SCENES for task in TASKS]
    path = folder / "quotas.csv"
    with open(path, "w", encoding="utf-8") as out:
        out.write("scene,task,quota\n")
        for number, (scene, task) in enumerate(strata):
            quota = total // len(strata) + (1 if number < total % len(strata) else 0)
            out.write(f'"{scene}","{task}",{quota}\n')
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=500_000)
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--draw", type=int, default=7000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--limit-of", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return
    if args.limit_of:
        limit(Path(args.limit_of[0]), Path(args.limit_of[1]))
        return
    manage = [sys.executable, "manage.py"]
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        pool = write_pool(work / "pool", args.items, args.images)
        tenth = write_pool(work / "tenth", args.items // 10, args.images // 10)
        print(
            f"pool: {args.items:,} items over {args.images:,} images, JSON "
            f"{pool.stat().st_size / 1024**2:.0f} MB (written in "
            f"{time.perf_counter() - started:.0f} s); load before: {_load()}"
        )
        template = _template(work / "template")
        folder = _fresh(work / "limit", template)
        command = [sys.executable, str(Path(__file__)), "--limit-of", str(pool), str(folder)]
        limit_seconds, limit_peak, _ = _measured(command, folder)
        print(f"limit: {limit_seconds:.1f} s, peak RSS {limit_peak / 1024:.0f} MiB; load {_load()}")
        folder = _fresh(work / "import", template)
        command = [*manage, "import_benchmark", str(pool), "--family", "endobench"]
        command += ["--name", "pool", "--pool", "--verbosity", "0"]
        seconds, peak, _ = _measured(command, folder)
        print(
            f"import: {seconds:.1f} s ({seconds / limit_seconds:.1f}x the limit, budget "
            f"{IMPORT_RATIO_BUDGET:.0f}x), peak RSS {peak / 1024:.0f} MiB "
            f"({peak / limit_peak:.2f}x the limit's); load {_load()}"
        )
        small_folder = _fresh(work / "import-tenth", template)
        small_command = [*command[:3], str(tenth), *command[4:]]
        small_seconds, small_peak, _ = _measured(small_command, small_folder)
        print(
            f"import of a tenth ({args.items // 10:,} items): {small_seconds:.1f} s, peak RSS "
            f"{small_peak / 1024:.0f} MiB: the full pool's peak is "
            f"{peak / small_peak:.2f}x a tenth's; load {_load()}"
        )
        quotas = _quota_file(work, args.draw)
        command = [*manage, "draw_benchmark", "pool", "drawn", "--quota-file", str(quotas)]
        command += ["--seed", "1", "--balance-answers"]
        draw_seconds, draw_peak, out = _measured(command, folder)
        lines = out.splitlines()
        drawn = lines[0] if lines else "?"
        inside = next((line for line in lines if line.startswith("the draw took")), "?")
        print(
            f"draw ({drawn}, 12 strata, answers balanced): {draw_seconds:.1f} s for the command "
            f"(start-up included; {inside}), budget {DRAW_BUDGET_SECONDS:.0f} s, peak RSS "
            f"{draw_peak / 1024:.0f} MiB; load {_load()}"
        )


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
