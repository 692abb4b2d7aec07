from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.services.errors import DomainError
from annotations.services.imports import ImportFailed, benchmark_import

FAMILIES = ("vlmeval", "endobench", "medqdeg", "gastricx")


class Command(BaseCommand):
    help = "Import a benchmark file (or a Gastric-X case folder/zip) as a new benchmark; all rows or none."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--family", required=True, choices=FAMILIES)
        parser.add_argument("--name", required=True)
        parser.add_argument("--description", default="")

    def handle(self, *args, path: Path, family: str, name: str, description: str, **options):
        if not path.exists():
            raise CommandError(f"{path} does not exist.")
        with tqdm(
            desc=f"importing {path.name}", unit=" items", disable=options["verbosity"] == 0
        ) as bar:
            try:
                benchmark = self._import(path, family, name, description, bar.update)
            except ImportFailed as error:
                for problem in error.problems:
                    self.stderr.write(str(problem))
                raise CommandError(str(error)) from error
            except DomainError as error:
                raise CommandError(str(error)) from error
        self.stdout.write(f"imported {benchmark.items.count()} items")

    def _import(self, path, family, name, description, progress):
        if family == "gastricx":
            from annotations.services.cases import gastricx_import

            return gastricx_import(path=path, name=name, description=description, progress=progress)
        return benchmark_import(
            path=path, family=family, name=name, description=description, progress=progress
        )
