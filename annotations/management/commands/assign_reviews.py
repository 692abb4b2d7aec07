from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Benchmark
from annotations.services.errors import DomainError
from annotations.services.review import assignments_create, reviewers_by_username


class Command(BaseCommand):
    help = "Assign a benchmark's pending items for double review, balanced across reviewers."
    # Long data work: checks run in `make test` and at deploy, not at every start.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--reviewers", required=True, help="comma-separated usernames")
        parser.add_argument("--per-item", type=int, default=2, help="reviews per item (default 2)")

    def handle(self, *args, name: str, reviewers: str, per_item: int, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"no benchmark named {name!r}")
        try:
            created = assignments_create(
                benchmark=benchmark,
                reviewers=reviewers_by_username(reviewers.split(",")),
                per_item=per_item,
            )
        except DomainError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"{created} assignments created in {name}")
