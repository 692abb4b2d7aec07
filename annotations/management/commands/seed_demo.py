from __future__ import annotations

import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER
from annotations.models import Benchmark
from annotations.services.imports import benchmark_import
from annotations.services.users import user_ensure

DEMO_USERS = (
    ("curator", (CURATOR,)),
    ("reviewer", (REVIEWER,)),
    ("reviewer2", (REVIEWER,)),
    # The adjudicator may review too, but is given no demo reviews: the disputes of the two
    # reviewers are theirs to settle (nobody settles a dispute they reviewed).
    ("adjudicator", (ADJUDICATOR, REVIEWER)),
)
DEMO_BENCHMARKS = ("endobench-demo", "medqdeg-demo", "gastricx-demo")
# A pool of generated candidates and a benchmark drawn from it (python manage.py draw_benchmark).
DEMO_POOL, DEMO_DRAWN = "endobench-pool", "endobench-drawn"
DEMO_DRAW = {
    "per": ["scene=40"],
    "seed": 7,
    "balance_answers": True,
    "exclude_near_duplicates": True,
}
# MedQ-DEG is about degraded images beside clean ones: the demo's clean items get twins from our
# engine (fast kinds only: a CT sinogram kind takes a third of a second per image).
DEMO_DEGRADATIONS = {"kinds": "gaussian_noise", "severities": "mild,severe"}


class Command(BaseCommand):
    help = "Create demo users (one per role) and synthetic EndoBench, MedQ-DEG and Gastric-X benchmarks."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, seed: int, **options):
        if not settings.DEVELOPMENT:
            raise CommandError(
                "seed_demo only runs in development (DEBUG=1): it creates users with known "
                "passwords."
            )
        users = {
            name: user_ensure(username=name, password=f"{name}-demo", roles=roles)[0]
            for name, roles in DEMO_USERS
        }
        missing = [
            name for name in DEMO_BENCHMARKS if not Benchmark.objects.filter(name=name).exists()
        ]
        if not missing:
            self.stdout.write("demo data already present")
            self._seed_pool(users["curator"], seed, options["verbosity"])
            self._assign_demo_reviews(users)
            return
        from demo import build_demo_files

        with tempfile.TemporaryDirectory() as folder:
            files = build_demo_files(Path(folder), seed=seed)
            sources = {
                "endobench-demo": ("endobench", files.endobench_tsv),
                "medqdeg-demo": ("medqdeg", files.medqdeg_tsv),
                "gastricx-demo": ("gastricx", files.gastricx_root),
            }
            for name in missing:
                family, path = sources[name]
                self._import(name, family, path, users["curator"], options["verbosity"])
        if "medqdeg-demo" in missing:
            from annotations.services.degrade import benchmark_degrade

            twins = benchmark_degrade(
                benchmark=Benchmark.objects.get(name="medqdeg-demo"),
                seed=seed,
                user=users["curator"],
                **DEMO_DEGRADATIONS,
            )
            self.stdout.write(f"made {twins} degraded twins in medqdeg-demo")
            self._demo_run(users["curator"])
        self.stdout.write(f"seeded {len(missing)} demo benchmark(s)")
        self._seed_pool(users["curator"], seed, options["verbosity"])
        self._assign_demo_reviews(users)

    def _demo_run(self, curator) -> None:
        """A finished model run on medqdeg-demo, answered in this process by the demo's simulated
        reader (`demo.reader`: it reads the image's noise, and guesses, confidently, when it cannot
        see), so that confidence, calibration shift and cliffs show without a model server."""
        from annotations.services import runs as run_services
        from demo.reader import DemoReader

        endpoint = run_services.endpoint_ensure_openai(
            name="demo-reader",
            base_url="http://127.0.0.1:9/v1",  # never called: the demo run is answered in process
            model="demo-reader (simulated, seed_demo)",
        )
        run = run_services.run_create(
            benchmark=Benchmark.objects.get(name="medqdeg-demo"),
            endpoint=endpoint,
            label="demo reader",
            created_by=curator,
            enqueue=False,
        )
        run = run_services.run_execute(run_id=run.pk, provider=DemoReader())
        cliffs = sum(1 for row in run.summary["cliffs"]["rows"] if row["cliff"])
        self.stdout.write(f"ran the demo reader on medqdeg-demo: {cliffs} cliff(s)")

    def _seed_pool(self, curator, seed: int, verbosity: int) -> None:
        """The demo pool (a few thousand generated candidates) and a benchmark drawn from it."""
        from annotations.services.draw import DrawRequest, benchmark_draw, pool_mark
        from demo.pool import write_endobench_pool

        if not Benchmark.objects.filter(name=DEMO_POOL).exists():
            with tempfile.TemporaryDirectory() as folder:
                path = write_endobench_pool(Path(folder), seed=seed)
                self._import(DEMO_POOL, "endobench", path, curator, verbosity)
            pool_mark(benchmark=Benchmark.objects.get(name=DEMO_POOL))
        if not Benchmark.objects.filter(name=DEMO_DRAWN).exists():
            record = benchmark_draw(
                pool=Benchmark.objects.get(name=DEMO_POOL),
                request=DrawRequest(name=DEMO_DRAWN, **DEMO_DRAW),
                user=curator,
            )
            drawn = record.report["rounds"][-1]["drawn"]
            self.stdout.write(f"drew {drawn} items from {DEMO_POOL} into {DEMO_DRAWN}")

    def _assign_demo_reviews(self, users: dict) -> None:
        # Demo reviewers get work: each demo benchmark is double-assigned once (idempotent), and
        # the first EndoBench items are already reviewed, some in dispute, for the adjudicator.
        from annotations.models import Assignment
        from annotations.services.review import assignments_create
        from demo.gastricx_reviews import demo_gastricx_reviews_seed
        from demo.reviews import demo_reviews_seed

        reviewers = [users["reviewer"], users["reviewer2"]]
        for benchmark in Benchmark.objects.filter(name__in=DEMO_BENCHMARKS):
            if Assignment.objects.filter(item__benchmark=benchmark).exists():
                continue
            created = assignments_create(benchmark=benchmark, reviewers=reviewers, per_item=2)
            self.stdout.write(f"assigned {created} reviews in {benchmark.name}")
            if benchmark.name == "endobench-demo":
                given = demo_reviews_seed(
                    benchmark=benchmark, first=users["reviewer"], second=users["reviewer2"]
                )
                self.stdout.write(f"gave {given} demo reviews in {benchmark.name}")
            if benchmark.name == "gastricx-demo":
                given = demo_gastricx_reviews_seed(
                    benchmark=benchmark, first=users["reviewer"], second=users["reviewer2"]
                )
                self.stdout.write(f"gave {given} demo reviews in {benchmark.name}")

    def _import(self, name: str, family: str, path: Path, curator, verbosity: int) -> None:
        with tqdm(desc=f"seeding {name}", unit=" items", disable=verbosity == 0) as bar:
            if family == "gastricx":
                from annotations.services.cases import gastricx_import

                gastricx_import(path=path, name=name, user=curator, progress=bar.update)
            else:
                benchmark_import(
                    path=path, family=family, name=name, user=curator, progress=bar.update
                )
