"""One small instance of every workflow, so that every main page has something to show."""

from __future__ import annotations

from pathlib import Path

from django.urls import reverse

from annotations.models import Case, Item, Job, Run
from annotations.services.cases import gastricx_import
from annotations.services.degrade import benchmark_degrade
from annotations.services.grading import grade_submit, grading_session_create
from annotations.services.human_baseline import human_baseline_open
from annotations.services.releases import release_build, release_create
from annotations.services.review import assignments_create
from annotations.services.triage import benchmark_triage
from tests.cases.builders import SMALL_GEOMETRY, write_case
from tests.factories import make_personas
from tests.pairs.helpers import make_pair_benchmark
from tests.releases.helpers import edit, endo_benchmark
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review
from tests.runs.helpers import make_done_run, make_run_benchmark


def _review_world(people: dict) -> dict[str, tuple[str, str]]:
    benchmark, items = assigned_benchmark(people, items=3, name="rv")
    disputed = both_review(items[0], people, ACCEPT, REJECT)
    # Her own benchmark: while it runs, a baseline hides the gold of its benchmark, so alice
    # would not review "rv" meanwhile.
    baseline_benchmark, _items = assigned_benchmark(people, items=2, name="rv-baseline")
    baseline = human_baseline_open(
        benchmark=baseline_benchmark, clinician=people["reviewer"], opened_by=people["curator"]
    )
    return {
        "review": ("alice", reverse("review-item", args=[items[1].pk])),
        "adjudication list": ("carol", reverse("adjudication")),
        "adjudicate": ("carol", reverse("adjudicate", args=[disputed.pk])),
        "history": ("carol", reverse("item-history", args=[disputed.pk])),
        "agreement index": ("dave", reverse("agreement-index")),
        "agreement": ("dave", reverse("agreement", args=["rv"])),
        "assign": ("dave", reverse("review-assign", args=["rv"])),
        "baseline list": ("alice", reverse("baseline-list")),
        "baseline": ("alice", reverse("baseline", args=[baseline.pk])),
    }


def _run_world(people: dict) -> dict[str, tuple[str, str]]:
    benchmark, items = make_run_benchmark(n=6, name="endo-runs")
    first = make_done_run(benchmark, items, label="model-one", answers={1: "B", 2: "B"})
    second = make_done_run(benchmark, items, label="model-two", answers={3: "refuse"})
    session = grading_session_create(run_a=first, run_b=second, created_by=people["curator"])
    # The graders' scope: the benchmark's items are theirs to review too.
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    for grader, preference in (("reviewer", "left"), ("adjudicator", "tie")):
        grade_submit(session=session, item=items[0], grader=people[grader], preference=preference)
    benchmark_triage(benchmark=benchmark)
    return {
        "runs": ("dave", reverse("runs")),
        "run": ("dave", reverse("run", args=[first.pk])),
        "leaderboard": ("dave", reverse("leaderboard", args=["endo-runs"])),
        "grading": ("alice", reverse("grading")),
        "grade": ("alice", reverse("grade", args=[session.pk])),
        "ratings": ("dave", reverse("grading-ratings")),
        "triage index": ("dave", reverse("triage-index")),
        "triage": ("dave", reverse("triage", args=["endo-runs"])),
    }


def _pair_world(people: dict) -> dict[str, tuple[str, str]]:
    benchmark = make_pair_benchmark("medq")
    benchmark_degrade(benchmark=benchmark, kinds="gaussian_blur", severities="mild,severe", seed=0)
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    items = list(Item.objects.filter(benchmark=benchmark).order_by("source_index"))
    make_done_run(benchmark, items, label="pair-model", answers={})
    twin = Item.objects.filter(clean_twin__isnull=False).order_by("source_index").first()
    return {
        "pairs": ("alice", reverse("pairs")),
        "pair review": ("alice", reverse("pair-review", args=[twin.pk])),
        "degrade": ("dave", reverse("benchmark-degrade", args=["medq"])),
        "robustness": ("dave", reverse("robustness", args=["medq"])),
    }


def _case_world(people: dict, tmp: Path) -> dict[str, tuple[str, str]]:
    write_case(tmp / "cases", "GX-I18N-0001", phases=SMALL_GEOMETRY)
    gastricx_import(path=tmp / "cases", name="gx", user=people["curator"])
    case = Case.objects.get(case_id="GX-I18N-0001")
    return {
        "case list": ("dave", reverse("cases")),
        "case": ("dave", reverse("case", args=[case.pk])),
    }


def _release_world(people: dict) -> dict[str, tuple[str, str]]:
    benchmark = endo_benchmark(people)
    first = release_build(
        release=release_create(benchmark=benchmark, name="EndoRel", version="1.0")
    )
    edit(Item.objects.get(benchmark=benchmark, source_index=2), question="Zq edited question")
    second = release_build(
        release=release_create(benchmark=benchmark, name="EndoRel", version="1.1")
    )
    return {
        "releases": ("dave", reverse("releases")),
        "release new": ("dave", reverse("release-new", args=["endo"])),
        "release": ("dave", reverse("release", args=[first.pk])),
        "release diff": (
            "dave",
            reverse("release-diff", args=[second.pk]) + f"?against={first.pk}",
        ),
    }


def build_world(tmp: Path) -> dict[str, tuple[str, str]]:
    """Every main page as {name: (username, url)}; the login page is seen anonymously."""
    people = make_personas()
    pages = {"login": ("", reverse("login"))}
    pages |= _review_world(people)
    pages |= _run_world(people)
    pages |= _pair_world(people)
    pages |= _case_world(people, tmp)
    pages |= _release_world(people)
    job = Job.objects.create(kind="import", params={}, created_by=people["curator"], total=4)
    item = Item.objects.filter(benchmark__name="rv").first()
    pages |= {
        "dashboard": ("dave", reverse("dashboard")),
        "benchmark": ("dave", reverse("benchmark", args=["rv"])),
        "item": ("dave", reverse("item", args=[item.pk])),
        "import": ("dave", reverse("benchmark-import")),
        "job": ("dave", reverse("job", args=[job.pk])),
        "review queue": ("bob", reverse("review-queue")),
    }
    assert Run.objects.exists()
    return pages
