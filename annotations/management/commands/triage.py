from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.models import Benchmark
from annotations.scoring.triage import ALL_CODES
from annotations.services.triage import TriageResult, benchmark_triage


def ranking(result: TriageResult) -> list[dict]:
    """`[{"index", "score", "reasons"}]`, highest score first (the order of the result)."""
    return [
        {
            "index": result.index_of[suspect.key],
            "score": round(suspect.score, 4),
            "reasons": [reason.as_json() for reason in suspect.reasons],
        }
        for suspect in result.suspects
    ]


class Command(BaseCommand):
    help = (
        "Compute and store the triage of a benchmark (suspicion score and reasons per item), "
        "print how many items each reason flags, and optionally write the ranking as JSON: "
        '[{"index", "score", "reasons"}], highest score first.'
    )
    # Long data work: checks run in `make test` and at deploy, not at every start.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--out", type=Path, help="JSON file to write the ranking to")

    def handle(self, *args, name: str, out: Path | None, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        with tqdm(desc="hashing images", unit="image", disable=options["verbosity"] < 1) as bar:
            result = benchmark_triage(benchmark=benchmark, progress=bar.update)
        counts = result.summary["by_code"]
        width = max(len(code) for code in ALL_CODES)
        for code in ALL_CODES:
            self.stdout.write(f"{code:<{width}}  {counts.get(code, 0):>7}")
        if out is not None:
            _write_atomic(out, ranking(result))
        self.stdout.write(
            self.style.SUCCESS(
                f"{benchmark.name}: {len(result.suspects)} suspects among "
                f"{result.summary['items']} items in {result.summary['seconds']:.1f} s"
                + (f"; ranking written to {out}" if out else "")
            )
        )


def _write_atomic(path: Path, rows: list[dict]) -> None:
    # Written beside the target and renamed: a reader never sees half a ranking.
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".part")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(rows, stream, ensure_ascii=False, indent=1)
    os.replace(temporary, path)
