"""The benchmark hub in Chromium: each role's actions, and an import through the web form that
ends on "N items imported -> Assign reviewers"."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Benchmark, Item, ItemKind, ItemStatus
from annotations.services.imports import benchmark_import
from annotations.services.review import assignments_create
from annotations.tasks import imports as import_tasks
from demo.endobench import write_endobench_tsv
from tests.browser.conftest import docs_picture, nav, screenshot
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.factories import make_benchmark, make_personas, make_user
from tests.formats.builders import b64, jpeg_bytes, write_tsv

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COLOURS = ["red", "green", "blue", "orange", "purple", "teal", "brown", "navy"]


@pytest.fixture
def people():
    people = make_personas()
    people["reviewer3"] = make_user("rosa", "reviewer")
    return people


@pytest.fixture
def endo(people, tmp_path):
    """The demo's EndoBench frames and questions (as `seed_demo` makes them), a third of them
    double-assigned, a few already settled, a few open-answer items."""
    source = write_endobench_tsv(tmp_path / "endobench.tsv", seed=0, n_items=24)
    benchmark = benchmark_import(
        path=source, family="endobench", name="endobench-demo", user=people["curator"]
    )
    ordered = list(benchmark.items.order_by("source_index").values_list("pk", flat=True))
    Item.objects.filter(pk__in=ordered[5::6]).update(kind=ItemKind.OPEN)
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2,
        filters={"category": benchmark.items.order_by("source_index")[0].category},
    )  # fmt: skip
    assigned = list(
        benchmark.items.filter(status=ItemStatus.IN_REVIEW).values_list("pk", flat=True)
    )
    Item.objects.filter(pk__in=assigned[:2]).update(status=ItemStatus.AGREED)
    Item.objects.filter(pk__in=assigned[2:3]).update(status=ItemStatus.DISPUTED)
    return benchmark


def test_a_curator_finds_every_action_and_the_reviewers_load(page, live_server, login, endo):
    page.set_viewport_size({"width": 1280, "height": 900})
    login("dave")
    page.click("text=endobench-demo")
    page.wait_for_selector("[data-hub-actions]")
    for key in ("assign", "baseline-open", "import", "releases", "release-new", "runs"):
        assert page.is_visible(f"[data-action={key}]"), key
    for key in ("agreement", "triage", "leaderboard", "degrade"):
        assert page.is_visible(f"[data-action={key}]"), key
    load = page.locator("[data-reviewer-load] tbody tr").all_inner_texts()
    open_alice = endo.items.filter(assignments__reviewer__username="alice").count()
    assert f"alice\t{open_alice}\t{open_alice}" in load
    assert "rosa\t0\t0" in load  # a reviewer with no work yet is listed for a fair share
    kinds = page.locator("[data-hub-kinds]").inner_text()
    assert "Multiple choice 20" in kinds and "Open answer 4" in kinds, kinds
    page.locator("table.items img.thumb").first.scroll_into_view_if_needed()
    page.wait_for_function("document.querySelector('table.items img.thumb').naturalWidth > 0")
    thumbs = page.eval_on_selector_all(
        "table.items img.thumb", "imgs => imgs.map(i => [i.naturalWidth, i.src])"
    )
    assert thumbs[0][0] == 96 and all("?w=96" in src for _, src in thumbs)  # not 320 px frames
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(docs_picture("hub.png")), full_page=False)
    screenshot(page, "hub_curator")

    page.click("[data-action=assign]")
    page.wait_for_url("**/benchmarks/endobench-demo/assign/")
    assert page.is_visible("form#baseline")


def test_a_reviewer_sees_their_work_and_no_curating_action(page, live_server, login, endo):
    login("alice")
    page.goto(f"{live_server.url}/benchmarks/endobench-demo/")
    page.wait_for_selector("[data-hub-mine]")
    # Open as the queue counts it: her item assignments still in review (pairs apart).
    mine = endo.items.filter(
        assignments__reviewer__username="alice",
        assignments__pair=False,
        status=ItemStatus.IN_REVIEW,
    ).count()
    assert mine > 0
    assert f"{mine} open · 0 done" in page.inner_text("[data-hub-mine]")
    assert page.is_visible("[data-action=review]")
    page.click("[data-action=review]")
    page.wait_for_url("**/review/items/*/")
    shown = page.locator(".work-where a.strong")
    expect(shown).to_have_text("endobench-demo")  # the benchmark's own queue
    expect(page.locator("[data-progress]")).to_contain_text(f"0 / {mine}")
    page.go_back()
    page.wait_for_selector("[data-hub-mine]")
    for key in ("assign", "baseline-open", "import", "releases", "release-new", "runs", "triage"):
        assert page.locator(f"[data-action={key}]").count() == 0, key
    assert page.locator("[data-reviewer-load]").count() == 0
    assert page.locator("details[data-navgroup=curate]").count() == 0
    screenshot(page, "hub_reviewer")
    page.click("[data-action=review]")
    page.wait_for_url("**/review/**")


def test_an_import_through_the_form_ends_on_assign_reviewers(
    page, live_server, login, people, tmp_path, monkeypatch
):
    # The worker's task, run as the worker would once the job is committed (no broker here).
    monkeypatch.setattr(
        import_tasks.benchmark_import_task, "delay", import_tasks.benchmark_import_task
    )
    good = write_tsv(
        tmp_path / "endo-good.tsv",
        [ENDO_HEADER, *[endo_row(i, b64(jpeg_bytes(COLOURS[i]))) for i in range(1, 6)]],
    )
    broken = write_tsv(
        tmp_path / "endo-broken.tsv",
        [ENDO_HEADER, endo_row(1, b64(jpeg_bytes())), endo_row(2, "iVBORw0KGgo=xx!")],
    )
    login("dave")
    nav(page, "curate", "Import a benchmark")
    page.fill("#id_name", "endobench-demo")  # taken below: the form is refused once
    make_benchmark("endobench-demo")
    page.select_option("#id_family", "endobench")
    page.set_input_files("#id_file", str(good))
    page.click("form[data-import-form] button[type=submit]")
    expect(page.locator("form[data-import-form]")).to_contain_text("already exists")
    expect(page.locator("[data-kept-file]")).to_contain_text(
        "endo-good.tsv"
    )  # no need to choose it again
    page.fill("#id_name", "endo-web")
    page.click("form[data-import-form] button[type=submit]")
    page.wait_for_selector("[data-imported]")
    assert page.inner_text("[data-imported]") == "5 items imported"
    screenshot(page, "import_done")
    page.click("[data-next=assign]")
    page.wait_for_url("**/benchmarks/endo-web/assign/")
    assert Benchmark.objects.get(name="endo-web").items.count() == 5

    nav(page, "curate", "Import a benchmark")
    page.fill("#id_name", "endo-broken")
    page.select_option("#id_family", "endobench")
    page.set_input_files("#id_file", str(broken))
    page.click("form[data-import-form] button[type=submit]")
    page.wait_for_selector("ul.problems li")
    problem = page.inner_text("ul.problems li")
    assert problem.startswith("Line 3 (row 2), column “image”:")  # the file's line
    assert "neither a valid base64 image nor the index of another row" in problem
    screenshot(page, "import_problems")
    shutil.rmtree(tmp_path, ignore_errors=True)
