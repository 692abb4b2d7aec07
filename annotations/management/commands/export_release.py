from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.models import Benchmark
from annotations.services.errors import DomainError
from annotations.services.releases import release_export, release_items


class Command(BaseCommand):
    help = (
        "Export a benchmark as a VLMEvalKit release: NAME.tsv, NAME.json and manifest.json in DIR."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--out", required=True, type=Path, help="folder to create")
        parser.add_argument("--all", action="store_true", help="every item, not only curated ones")

    def handle(self, *args, name: str, out: Path, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        total = release_items(benchmark, include_all=options["all"]).count()
        with tqdm(
            total=total, desc="exporting", unit=" items", disable=options["verbosity"] == 0
        ) as bar:
            try:
                result = release_export(
                    benchmark=benchmark,
                    out_dir=out,
                    include_all=options["all"],
                    progress=bar.update,
                )
            except DomainError as error:
                raise CommandError(str(error)) from error
        self.stdout.write(f"exported {result.item_count} items to {result.folder}")
