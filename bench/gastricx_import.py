"""A Gastric-X import of N real-size cases on 1 and on 2 real Celery workers (budget: ≥ 1.6×).

Run: ``.venv/bin/python bench/gastricx_import.py [--cases 4] [--workers 1,2]``. It builds a
throw-away site in a temporary folder (SQLite in WAL mode and the file-system broker, as the
embedded default), generates N cases of four 512×512×200 phases with CT-like noise
(`imaging.synthcase`), zips them (stored, as DICOM compresses little) and, for each worker
count, starts that many `celery worker` processes (one case at a time each: `--pool threads
--concurrency 1`), imports a small warm-up zip, then times the real import from `import_start`
(the job is queued) until the job is done: planning, every case's chunk, and the final commit.
The speed-up of 2 workers is printed against 1, measured in the same run, with the machine's
load average (the figures move with what else runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.celery_site import setup_django, start_workers, stop_workers  # noqa: E402

SHAPE = (200, 512, 512)
WARM_UP_SHAPE = (16, 64, 64)
SPEED_UP_BUDGET = 1.6


def write_zip(root: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zipped:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zipped.write(path, path.relative_to(root))
    return archive


class _Upload:
    """An upload already on disk (a hard link of the bench's zip, moved into place)."""

    def __init__(self, source: Path, scratch: Path) -> None:
        self.name = source.name
        self._path = scratch / f"{time.monotonic_ns()}-{source.name}"
        os.link(source, self._path)

    def temporary_file_path(self) -> str:
        return str(self._path)


def import_until_done(archive: Path, name: str, scratch: Path, timeout: float = 3600) -> float:
    """Seconds from queueing the import until the workers finished it."""
    from annotations.models import JobStatus
    from annotations.services.import_jobs import import_start, upload_store

    stored = upload_store(upload=_Upload(archive, scratch))
    started = time.perf_counter()
    job = import_start(stored=stored, family="gastricx", name=name, user=None)
    while time.perf_counter() - started < timeout:
        job.refresh_from_db()
        if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    assert job.status == JobStatus.DONE, (job.status, job.message, job.result)
    return elapsed


def workers_of(name: str) -> set[str]:
    from annotations.models import JobChunk

    return {
        chunk.result.get("worker", "")
        for chunk in JobChunk.objects.filter(job__params__name=name, job__kind="import")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=4)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="gx-import-") as folder:
        var_dir = Path(folder)
        env = setup_django(var_dir)
        from annotations.imaging.synthcase import write_synthetic_case

        scratch = var_dir / "scratch"
        scratch.mkdir()
        print(f"generating {args.cases} cases of 4 phases {SHAPE} ...", flush=True)
        started = time.perf_counter()
        for number in range(args.cases):
            write_synthetic_case(var_dir / "cases", f"GX-B-{number:04d}", shape=SHAPE, seed=number)
        archive = write_zip(var_dir / "cases", var_dir / "cases.zip")
        shutil.rmtree(var_dir / "cases")
        print(
            f"  {time.perf_counter() - started:.0f} s, zip {archive.stat().st_size / 2**20:.0f} MiB"
        )
        for number in range(max(counts)):
            write_synthetic_case(
                var_dir / "warm", f"GX-W-{number:04d}", shape=WARM_UP_SHAPE, seed=number
            )
        warm = write_zip(var_dir / "warm", var_dir / "warm.zip")

        seconds: dict[int, float] = {}
        loads: dict[int, tuple[float, float]] = {}
        for count in counts:
            workers = start_workers(count, env)
            try:
                import_until_done(warm, f"warm-up-{count}", scratch)
                before = os.getloadavg()[0]
                seconds[count] = import_until_done(archive, f"bench-{count}", scratch)
                loads[count] = (before, os.getloadavg()[0])
                took = len(workers_of(f"bench-{count}"))
            finally:
                stop_workers(workers)
            print(
                f"{count} worker(s): {seconds[count]:.1f} s for {args.cases} cases "
                f"({seconds[count] / args.cases:.1f} s a case; {took} worker(s) took cases; "
                f"load average {loads[count][0]:.1f} → {loads[count][1]:.1f} on "
                f"{os.cpu_count()} CPUs)",
                flush=True,
            )
        if 1 in seconds:
            for count in counts:
                if count > 1:
                    ratio = seconds[1] / seconds[count]
                    verdict = "within" if ratio >= SPEED_UP_BUDGET else "BELOW"
                    print(
                        f"speed-up with {count} workers: {ratio:.2f}× "
                        f"({verdict} the budget of ≥ {SPEED_UP_BUDGET}× for 2)"
                    )


if __name__ == "__main__":
    main()
