from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.models import Benchmark, Release, ReleaseStatus
from annotations.services.errors import DomainError
from annotations.services.releases import (
    PART_BYTES,
    release_build,
    release_create,
    release_export,
    release_items,
)


class Command(BaseCommand):
    help = (
        "Export a benchmark as a VLMEvalKit release. Without --version: NAME.tsv, NAME.json and "
        "manifest.json in --out. With --version: a recorded, immutable release (TSV, local "
        "layout, JSON with provenance, COCO, manifest) in --out or RELEASES_ROOT/NAME/VERSION; "
        "running it again after a failure or a kill retries the same release."
    )
    # Long data work: checks run in `make test` and at deploy, not at every start.
    requires_system_checks: list[str] = []

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version V` names the release version (as the issue asks); Django's own --version,
        # which prints Django's version, gives way.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--out", type=Path, help="folder to create")
        parser.add_argument("--all", action="store_true", help="every item, not only curated ones")
        parser.add_argument("--version", dest="release_version", help="record a release version")
        parser.add_argument("--dataset-name", help="dataset name in VLMEvalKit (default: NAME)")
        parser.add_argument("--split", action="append", default=[], help="only this split")
        parser.add_argument("--category", action="append", default=[], help="only this category")
        parser.add_argument(
            "--withhold-split", default="", help="split whose answers are kept apart"
        )
        parser.add_argument(
            "--part-bytes", type=int, default=PART_BYTES, help="split size of NAME.tsv"
        )
        parser.add_argument(
            "--local-layout",
            action="store_true",
            help="also write NAME_local.tsv + images/ (with --version; automatic past the part size)",
        )

    def handle(self, *args, name: str, out: Path | None, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        filters = {"split": options["split"], "category": options["category"]}
        total = release_items(benchmark, include_all=options["all"], filters=filters).count()
        with tqdm(
            total=total, desc="exporting", unit=" items", disable=options["verbosity"] == 0
        ) as bar:
            try:
                if options["release_version"]:
                    folder, count = self._release(benchmark, out, filters, bar.update, options)
                else:
                    if out is None:
                        raise CommandError("--out is required without --version.")
                    result = release_export(
                        benchmark=benchmark,
                        out_dir=out,
                        name=options["dataset_name"],
                        include_all=options["all"],
                        filters=filters,
                        progress=bar.update,
                    )
                    folder, count = result.folder, result.item_count
            except DomainError as error:
                raise CommandError(str(error)) from error
        self.stdout.write(f"exported {count} items to {folder}")

    def _release(self, benchmark, out, filters, progress, options) -> tuple[Path, int]:
        dataset = options["dataset_name"] or benchmark.name
        release = Release.objects.filter(name=dataset, version=options["release_version"]).first()
        if release is None:
            release = release_create(
                benchmark=benchmark,
                name=dataset,
                version=options["release_version"],
                include_all=options["all"],
                filters=filters,
                withhold_split=options["withhold_split"],
                path=out.resolve() if out else None,
            )
        elif release.status == ReleaseStatus.PUBLISHED:
            raise CommandError(f"Release {dataset} {release.version} is already published.")
        # else: a killed or failed build of this very release: build it again, same selection.
        release = release_build(
            release=release,
            progress=progress,
            part_bytes=options["part_bytes"],
            # VLMEvalKit's on-disk layout: past the part size, or always on request.
            local_layout=True if options["local_layout"] else None,
        )
        return Path(release.path), release.item_count
