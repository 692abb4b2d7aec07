"""Run throughput against a loopback endpoint of 200 ms latency, in this process and with real
Celery workers sharing a run.

Budgets (DESIGN.md): ≥ 80% of C / 0.2 s; two workers finish a run ≥ 1.6× faster than one.

Run: ``.venv/bin/python bench/run_throughput.py [--items 200] [--concurrency 8] [--workers 1,2]
[--worker-items 400]``. Everything goes through the real code path: a temporary SQLite database
(migrated, WAL, as the embedded default), a benchmark with images, the run service, the `openai`
client, one Prediction written per answer.

- In this process: `run_execute` answers every chunk one after the other (what `run_model`
  does); its throughput is printed as a ratio to C / 0.2 s.
- With workers (`--workers 1,2`): for each count, that many real `celery worker` processes (one
  chunk at a time each: `--pool threads --concurrency 1`) on the file-system broker; the run is
  timed from its creation (its chunks' tasks are sent) until it is done, after a warm-up run
  that every worker has answered part of. The speed-up of N workers is printed against one,
  measured in the same run.

Few items cannot reach the budget whatever the code: 50 items at C = 8 take at least 7 rounds
of 200 ms (the last one with 2 requests), a ceiling of 50 / 56 = 0.89 of C / 0.2 s; the
report prints that ceiling, and for the workers the ceiling set by how the chunks divide among
them (400 items at C = 8 are 13 chunks of 4 rounds, the last of 2: 2 workers take 26 rounds to
1's 50, a ceiling of 1.92×).
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.celery_site import setup_django, start_workers, stop_workers  # noqa: E402

LATENCY = 0.2
BUDGET = 0.8
SPEED_UP_BUDGET = 1.6


def make_items(count: int, name: str = "bench-throughput"):
    from PIL import Image as PILImage

    from annotations.models import Benchmark, Item, ItemImage
    from annotations.services.images import image_store

    benchmark = Benchmark.objects.create(name=name, family="endobench")
    for index in range(count):
        buffer = io.BytesIO()
        PILImage.new("RGB", (448, 448), (index % 255, 90, 60)).save(buffer, format="JPEG")
        image, _ = image_store(data=buffer.getvalue())
        item = Item.objects.create(
            benchmark=benchmark,
            source_index=index,
            question=f"Which finding is shown in frame {index}?",
            options=["Polyp", "Ulcer", "Normal mucosa", "Bleeding"],
            answer="A",
            category="Lesion",
        )
        ItemImage.objects.create(item=item, image=image, position=0)
    return benchmark


def _endpoint(base_url: str):
    from annotations.services import runs as run_services

    return run_services.endpoint_ensure_openai(name="bench", base_url=base_url, model="fake-model")


def execute(benchmark, base_url: str, concurrency: int) -> float:
    """Seconds to execute one run of the benchmark in this process, from claim to summary."""
    from annotations.services import runs as run_services

    run = run_services.run_create(
        benchmark=benchmark, endpoint=_endpoint(base_url), concurrency=concurrency, enqueue=False
    )
    started = time.perf_counter()
    run = run_services.run_execute(run_id=run.pk)
    elapsed = time.perf_counter() - started
    assert run.failed == 0 and run.completed == run.total, (run.completed, run.error)
    return elapsed


def measure_in_process(items: int, concurrency: int) -> float:
    from tests.support.fake_openai import throughput_server

    warm_up = make_items(concurrency, name="bench-warm-up")
    benchmark = make_items(items)
    with throughput_server(latency=LATENCY) as server:
        # A worker process pays the `openai` client's first-use costs once, not once per run.
        execute(warm_up, server.base_url, concurrency)
        elapsed = execute(benchmark, server.base_url, concurrency)
    return items / elapsed


# --- real workers ---------------------------------------------------------------------------


class Gate:
    """The endpoint's script: 'A' after LATENCY; while `closed_until` requests are not yet in
    flight together, answers wait (warm-up: every worker must be answering before it ends)."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.wanted = 0
        self.server = None

    def close_until(self, in_flight: int) -> None:
        self.wanted = in_flight
        self.open.clear()

    def __call__(self, request_json, attempt_no):
        from tests.support.fake_openai import Reply

        if self.server.in_flight >= self.wanted:
            self.open.set()
        self.open.wait(timeout=120)
        return Reply(text="A")


def run_until_done(benchmark, base_url: str, concurrency: int, timeout: float = 600) -> float:
    """Seconds from creating a run (its chunks' tasks are sent) until the workers finished it."""
    from annotations.models import Run, RunStatus
    from annotations.services import runs as run_services

    started = time.perf_counter()
    run = run_services.run_create(
        benchmark=benchmark, endpoint=_endpoint(base_url), concurrency=concurrency
    )
    while time.perf_counter() - started < timeout:
        status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).get()
        if status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            break
        time.sleep(0.02)
    elapsed = time.perf_counter() - started
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.failed == 0, (run.status, run.error)
    return elapsed


def measure_workers(counts: list[int], items: int, concurrency: int, env) -> dict[int, float]:
    from tests.support.fake_openai import FakeOpenAIServer

    gate = Gate()
    rates: dict[int, float] = {}
    with FakeOpenAIServer(gate, latency=LATENCY) as server:
        gate.server = server
        for count in counts:
            benchmark = make_items(items, name=f"bench-workers-{count}")
            warm_up = make_items(count * concurrency * 4, name=f"bench-warm-up-{count}")
            workers = start_workers(count, env)
            try:
                gate.close_until(count * concurrency)
                run_until_done(warm_up, server.base_url, concurrency)
                rates[count] = items / run_until_done(benchmark, server.base_url, concurrency)
            finally:
                stop_workers(workers)
    return rates


def worker_ceiling(items: int, concurrency: int, workers: int) -> float:
    """The speed-up the chunks allow on a steady endpoint: rounds of one worker over the rounds
    of the busiest of `workers` taking chunks in turn."""
    from annotations.services.runs import chunk_size

    size = chunk_size(total=items, concurrency=concurrency, kind="model")
    chunks = [min(size, items - start) for start in range(0, items, size)]
    rounds = [math.ceil(chunk / concurrency) for chunk in chunks]
    busiest = max(sum(rounds[n::workers]) for n in range(workers))
    return sum(rounds) / busiest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", default="", help="worker counts to compare, e.g. 1,2")
    parser.add_argument("--worker-items", type=int, default=400)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    ok = True
    with tempfile.TemporaryDirectory(prefix="clinreview-bench-") as folder:
        env = setup_django(Path(folder))
        rate = measure_in_process(args.items, args.concurrency)
        worker_rates = measure_workers(counts, args.worker_items, args.concurrency, env)
    ideal = args.concurrency / LATENCY
    ratio = rate / ideal
    ceiling = args.items / (math.ceil(args.items / args.concurrency) * args.concurrency)
    print(f"items: {args.items}, concurrency: {args.concurrency}, latency: {LATENCY * 1000:.0f} ms")
    print(f"throughput: {rate:.1f} items/s; ideal C/0.2 s: {ideal:.1f} items/s")
    print(f"ratio: {ratio:.2f} (budget ≥ {BUDGET:.2f}; ceiling from whole rounds {ceiling:.2f})")
    ok &= ratio >= BUDGET
    if worker_rates:
        one = worker_rates.get(1)
        print(f"workers ({args.worker_items} items, one chunk at a time per worker):")
        for count, worker_rate in worker_rates.items():
            line = f"  {count} worker(s): {worker_rate:.1f} items/s ({worker_rate / ideal:.2f} of C/0.2 s)"
            if one and count > 1:
                speed_up = worker_rate / one
                allowed = worker_ceiling(args.worker_items, args.concurrency, count)
                line += f"; speed-up {speed_up:.2f}× (ceiling from the chunks {allowed:.2f}×)"
                if count == 2:
                    line += f", budget ≥ {SPEED_UP_BUDGET:.1f}×"
                    ok &= speed_up >= SPEED_UP_BUDGET
            print(line)
    print("OK" if ok else "TOO SLOW")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
