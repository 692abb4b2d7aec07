"""Draw a benchmark from a pool, or top one up after rejections."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Benchmark
from annotations.services.draw import DrawRequest, benchmark_draw, benchmark_top_up
from annotations.services.errors import DomainError


class Command(BaseCommand):
    help = (
        "Draw a new benchmark NAME from the pool POOL: a stratified random draw with a quota "
        "per stratum, reproducible from --seed; or --top-up NAME after rejections."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("pool")
        parser.add_argument("name")
        parser.add_argument(
            "--per",
            action="append",
            default=[],
            metavar="FIELD=N",
            help="N items per value of FIELD; several (or scene,task=N) for a combination",
        )
        parser.add_argument("--quota-file", type=Path, help="CSV: the fields, then 'quota'")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--balance-answers", action="store_true")
        parser.add_argument("--exclude-near-duplicates", action="store_true")
        parser.add_argument("--exclude-images-of", action="append", default=[], metavar="OTHER")
        parser.add_argument(
            "--top-up",
            action="store_true",
            help="draw replacements for the rejected items of the drawn benchmark NAME",
        )

    def handle(self, *args, pool: str, name: str, **options):
        try:
            source = Benchmark.objects.get(name=pool)
        except Benchmark.DoesNotExist:
            raise CommandError(f"no benchmark named {pool!r}") from None
        try:
            if options["top_up"]:
                self._top_up(source, name)
            else:
                self._draw(source, name, options)
        except DomainError as error:
            raise CommandError(str(error)) from error

    def _draw(self, pool: Benchmark, name: str, options: dict) -> None:
        if options["seed"] is None:
            raise CommandError("--seed is required: a draw is reproduced from its seed")
        quota_csv = ""
        if options["quota_file"]:
            try:
                quota_csv = options["quota_file"].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise CommandError(f"cannot read the quota file: {error}") from None
        started = time.perf_counter()
        record = benchmark_draw(
            pool=pool,
            request=DrawRequest(
                name=name,
                seed=options["seed"],
                per=options["per"],
                quota_csv=quota_csv,
                balance_answers=options["balance_answers"],
                exclude_near_duplicates=options["exclude_near_duplicates"],
                exclude_images_of=options["exclude_images_of"],
            ),
        )
        self._report(record.report["rounds"][-1])
        self.stdout.write(f"the draw took {time.perf_counter() - started:.1f} s")

    def _top_up(self, pool: Benchmark, name: str) -> None:
        try:
            benchmark = Benchmark.objects.get(name=name, draw__pool=pool)
        except Benchmark.DoesNotExist:
            raise CommandError(f"no benchmark {name!r} drawn from {pool.name!r}") from None
        self._report(benchmark_top_up(benchmark=benchmark))

    def _report(self, report: dict) -> None:
        write = self.stdout.write
        write(f"drawn {report['drawn']} items")
        for label, count in report["per_stratum"].items():
            write(f"  {label}: {count}")
        excluded = report["excluded"]
        if any(excluded.values()):
            write(
                f"excluded {excluded['items_by_sha256']} items showing "
                f"{excluded['images_by_sha256']} images of the other benchmarks (same sha256), "
                f"{excluded['items_by_phash']} showing {excluded['images_by_phash']} "
                "near-identical images (perceptual hash)"
            )
        write(
            f"skipped {report['duplicates_skipped']} duplicate and "
            f"{report['near_duplicates_skipped']} near-duplicate questions on a drawn image"
        )
        for label in report["exhausted"]:
            write(f"pool exhausted for {label}")
        if report["balanced"]:
            write(f"answer positions balanced: {report['moved']} items reordered")
            for label, before in report["letters_before"].items():
                after = report["letters_after"][label]
                write(f"  {label}: before {_letters(before)}; after {_letters(after)}")


def _letters(counts: dict) -> str:
    return " ".join(f"{letter}={n}" for letter, n in counts.items())
