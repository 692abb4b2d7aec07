from __future__ import annotations

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from annotations.access import user_roles
from annotations.models import Assignment, Benchmark, Case, Item, Review, Volume
from annotations.selectors.review import adjudication_queue
from annotations.services.releases import release_build, release_create

pytestmark = pytest.mark.django_db


def test_seed_demo_creates_all_three_families_and_one_user_per_role_once(capsys):
    call_command("seed_demo", verbosity=0)

    families = dict(Benchmark.objects.values_list("name", "family"))
    assert families == {
        "endobench-demo": "endobench",
        "medqdeg-demo": "medqdeg",
        "gastricx-demo": "gastricx",
        "endobench-pool": "endobench",
        "endobench-drawn": "endobench",
    }
    # A pool of generated candidates, and 40 per scene drawn from it with their lineage.
    pool = Benchmark.objects.get(name="endobench-pool")
    assert pool.is_pool and pool.item_count > 2000
    drawn = Item.objects.filter(benchmark__name="endobench-drawn")
    assert drawn.count() == 160 and drawn.filter(pool_item__benchmark=pool).count() == 160
    endo = Item.objects.filter(benchmark__name="endobench-demo")
    assert endo.count() == 60
    assert (
        endo.exclude(scene="").count() == 60 and endo.filter(item_images__isnull=True).count() == 0
    )
    modalities = set(
        Item.objects.filter(benchmark__name="medqdeg-demo").values_list("modality", flat=True)
    )
    assert {"CT", "MRI", "Dermoscopy", "Histopathology"} <= modalities
    # Every clean MedQ-DEG item has a mild and a severe twin, assigned for pair review.
    twins = Item.objects.filter(benchmark__name="medqdeg-demo", clean_twin__isnull=False)
    clean = Item.objects.filter(benchmark__name="medqdeg-demo", clean_twin__isnull=True)
    assert twins.count() == 2 * clean.count() > 0
    assert set(twins.values_list("degradation_severity", flat=True)) == {"mild", "severe"}
    assert Assignment.objects.filter(item__in=twins).count() == 2 * twins.count()
    assert Case.objects.filter(benchmark__name="gastricx-demo").count() == 2
    phases = set(Volume.objects.values_list("phase", flat=True))
    assert phases == {"non_contrast", "arterial", "venous", "delayed"}
    # Every Gastric-X task can be tried: each case carries items of the five kinds.
    for case in Case.objects.filter(benchmark__name="gastricx-demo"):
        kinds = list(case.items.values_list("kind", flat=True))
        assert {kind: kinds.count(kind) for kind in set(kinds) - {"mcq"}} == {
            "open": 3,  # diagnostic, CT and endoscopy reports
            "label": 4,  # TNM, T, N, M
            "box": 4,  # the tumor on each of the four phases
            "retrieval": 3,
        }
        assert "mcq" in kinds
    label_sets = Benchmark.objects.get(name="gastricx-demo").label_sets
    assert set(label_sets) == {"tnm", "t", "n", "m"}

    for username, role in [
        ("curator", "curator"),
        ("reviewer", "reviewer"),
        ("reviewer2", "reviewer"),
        ("adjudicator", "adjudicator"),
    ]:
        user = authenticate(username=username, password=f"{username}-demo")
        assert user is not None and role in user_roles(user)
    assert "seeded 3 demo benchmark(s)" in capsys.readouterr().out

    call_command("seed_demo", verbosity=0)  # idempotent: a second run adds nothing
    assert (
        Benchmark.objects.count() == 5
        and Item.objects.filter(benchmark__name="endobench-demo").count() == 60
    )
    assert "already present" in capsys.readouterr().out


def test_the_demo_adjudicator_has_disputes_of_others_to_settle_right_after_seeding():
    call_command("seed_demo", verbosity=0)
    adjudicator = authenticate(username="adjudicator", password="adjudicator-demo")
    disputes = Item.objects.filter(status="disputed")
    assert disputes.count() >= 2
    assert not Review.objects.filter(reviewer=adjudicator).exists()
    assert not Assignment.objects.filter(reviewer=adjudicator).exists()
    mine = list(adjudication_queue(adjudicator))
    assert mine and set(mine) == set(disputes)
    for item in mine:  # each dispute is between the two demo reviewers
        reviewers = set(item.reviews.values_list("reviewer__username", flat=True))
        assert reviewers == {"reviewer", "reviewer2"}
    # Among them a Gastric-X report edited two ways and a corrected T stage.
    gastric = disputes.filter(benchmark__name="gastricx-demo")
    assert sorted(gastric.values_list("kind", flat=True)) == ["label", "open"]


def test_seed_demo_refuses_to_run_outside_development(settings):
    settings.DEVELOPMENT = False
    with pytest.raises(CommandError, match="DEBUG=1"):
        call_command("seed_demo", verbosity=0)
    assert not Benchmark.objects.exists()
    assert not get_user_model().objects.filter(username="curator").exists()


def test_a_release_of_the_gastricx_demo_holds_a_file_per_task(tmp_path, settings):
    settings.RELEASES_ROOT = tmp_path / "releases"
    call_command("seed_demo", verbosity=0)
    benchmark = Benchmark.objects.get(name="gastricx-demo")
    curated = Item.objects.filter(benchmark=benchmark).curated()
    assert set(curated.values_list("kind", flat=True)) == {
        "mcq",
        "label",
        "open",
        "box",
        "retrieval",
    }

    release = release_build(release=release_create(benchmark=benchmark, name="GxDemo", version="1"))

    assert release.status == "published", release.error
    files = set(release.manifest["files"])
    assert {"GxDemo.tsv", "GxDemo_report.tsv", "GxDemo_localization.json"} <= files
    assert "GxDemo_retrieval.json" in files


def test_the_demo_medqdeg_run_has_confidences_and_shows_a_cliff():
    from annotations.models import Prediction, Run

    call_command("seed_demo", verbosity=0)
    run = Run.objects.get(benchmark__name="medqdeg-demo")
    assert run.status == "done" and run.completed == run.total == 126
    answers = Prediction.objects.filter(run=run)
    assert answers.filter(confidence__isnull=False).count() == run.total
    by_level = run.summary["calibration"]["by"]["severity"]
    # The reader reads clean and mildly noisy images (it knows the answers that do not depend on
    # what the image shows), and guesses at severe, as sure as ever: accuracy collapses while
    # confidence barely moves (calibration shift).
    assert by_level["clean"]["accuracy"] > 0.6 and by_level["severe"]["accuracy"] < 0.4
    assert by_level["severe"]["gap"] > by_level["clean"]["gap"] + 0.2
    [noise] = [r for r in run.summary["cliffs"]["rows"] if r["modality"] is None]
    assert noise["degradation_type"] == "gaussian_noise" and noise["n"] == 42
    assert noise["cliff"] is True
