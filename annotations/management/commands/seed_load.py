from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotations.services.errors import DomainError
from annotations.services.seed import benchmark_seed


class Command(BaseCommand):
    help = (
        "Create a synthetic benchmark for load tests: N items over a few shared images, each "
        "assigned to two of R new reviewers (NAME-r1 ... NAME-rR). Development only: refuses "
        "to run unless DEBUG is on."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="name of the new benchmark")
        parser.add_argument("--items", type=int, required=True, help="number of items")
        parser.add_argument("--reviewers", type=int, default=10, help="reviewers (default 10)")
        parser.add_argument(
            "--password", default="load-test-password", help="the reviewers' password"
        )

    def handle(self, *args, name: str, items: int, reviewers: int, password: str, **options):
        if not settings.DEBUG:
            raise CommandError("seed_load writes synthetic data: it runs only with DEBUG=1.")
        started = time.perf_counter()
        try:
            benchmark, users, assigned = benchmark_seed(
                name=name, items=items, reviewers=reviewers, password=password
            )
        except DomainError as error:
            raise CommandError(str(error)) from error
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{benchmark.name}: {items} items, {len(users)} reviewers "
            f"({users[0].get_username()} ...), {assigned} assignments in {seconds:.1f} s"
        )
