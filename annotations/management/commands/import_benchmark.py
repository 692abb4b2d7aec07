from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.labels import import_warning_label
from annotations.services.errors import DomainError
from annotations.services.imports import (
    ImportFailed,
    ImportProgress,
    ImportReport,
    benchmark_import_run,
)

FAMILIES = ("vlmeval", "endobench", "medqdeg", "gastricx")
LISTED_WARNINGS = 20


class Command(BaseCommand):
    help = "Import a benchmark file (or a Gastric-X case folder/zip) as a new benchmark; all rows or none."
    # Starts at once: the checks of the whole project are not what an import needs.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--family", required=True, choices=FAMILIES)
        parser.add_argument("--name", required=True)
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--pool",
            action="store_true",
            help="mark the import as a pool of candidates to draw benchmarks from",
        )

    def handle(self, *args, path: Path, family: str, name: str, description: str, **options):
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        quiet = options["verbosity"] == 0
        try:
            if family == "gastricx":
                items, report = self._gastricx(path, name, description, quiet)
            else:
                items, report = self._table(path, family, name, description, quiet)
        except ImportFailed as error:
            for problem in error.problems:
                self.stderr.write(str(problem))
            self._warnings(error.report)
            raise CommandError(str(error)) from error
        except DomainError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"imported {items} items")
        if options.get("pool"):
            from annotations.models import Benchmark
            from annotations.services.draw import pool_mark

            pool_mark(benchmark=Benchmark.objects.get(name=name))
            self.stdout.write(f"{name} is a pool")
        self._warnings(report)

    def _table(self, path, family, name, description, quiet) -> tuple[int, ImportReport]:
        bar_format = "{desc}: {percentage:3.0f}%|{bar}| {postfix}"
        with tqdm(
            total=1.0, desc=f"importing {path.name}", bar_format=bar_format, disable=quiet
        ) as bar:

            def progress(state: ImportProgress) -> None:
                bar.n = state.fraction
                bar.set_postfix_str(f"{state.stage} {state.items} items", refresh=False)
                bar.refresh()

            result = benchmark_import_run(
                path=path, family=family, name=name, description=description, progress=progress
            )
        return result.items, result.report

    def _gastricx(self, path, name, description, quiet) -> tuple[int, ImportReport]:
        from annotations.services.cases import gastricx_import

        with tqdm(desc=f"importing {path.name}", unit=" cases", disable=quiet) as bar:
            benchmark = gastricx_import(
                path=path, name=name, description=description, progress=bar.update
            )
        return benchmark.items.count(), getattr(benchmark, "import_report", ImportReport())

    def _warnings(self, report: ImportReport) -> None:
        if not report.total:
            return
        counts = ", ".join(
            f"{import_warning_label(code)} ({count})" for code, count in report.counts.items()
        )
        self.stdout.write(f"{report.total} warnings: {counts}")
        for warning in report.warnings[:LISTED_WARNINGS]:
            where = f"row {warning.row}" + (
                f", column '{warning.column}'" if warning.column else ""
            )
            self.stdout.write(f"  {where}: {import_warning_label(warning.code)} ({warning.detail})")
        if report.total > LISTED_WARNINGS:
            self.stdout.write(f"  … and {report.total - LISTED_WARNINGS} more")
