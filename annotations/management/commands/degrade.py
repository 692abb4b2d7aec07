from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.models import Benchmark
from annotations.services.degrade import (
    benchmark_degrade,
    degrade_plan,
    parse_kinds,
    parse_severities,
)
from annotations.services.errors import DomainError


class Command(BaseCommand):
    help = (
        "Create degraded twins of every clean item of a benchmark (each kind that fits the item's "
        "modality, each severity); re-running with the same arguments creates nothing new."
    )
    # Long data work: checks run in `make test` and at deploy, not at every start.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--kinds", default="all", help="all, or k1,k2 (degradation ids)")
        parser.add_argument("--severities", default="mild,severe", help="mild,severe")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, name: str, kinds: str, severities: str, seed: int, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        try:
            kinds_list, severities_list = parse_kinds(kinds), parse_severities(severities)
            total = len(
                degrade_plan(
                    benchmark=benchmark, kinds=kinds_list, severities=severities_list, seed=seed
                )
            )
            with tqdm(
                total=total,
                desc=f"degrading {name}",
                unit=" twins",
                disable=options["verbosity"] == 0,
            ) as bar:
                created = benchmark_degrade(
                    benchmark=benchmark,
                    kinds=kinds_list,
                    severities=severities_list,
                    seed=seed,
                    progress=bar.update,
                )
        except DomainError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"created {created} degraded items")
