"""One Gastric-X case from import to release, entirely in Chromium, as the people who do it.

The curator uploads a zip of one case folder (real DICOM) through the import page and assigns
two reviewers; each reviewer works the benchmark's queue from its hub through every item (the
second disagrees on one item of each kind); the adjudicator settles every dispute from the
adjudication page (take A, take B and a new version); a grader scores a report with its CT in
view; the curator builds and publishes the release and downloads its archive, whose files hold
the reviewed and adjudicated content.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect

from annotations.models import Grade, Item, ItemStatus
from annotations.tasks import imports as import_tasks
from annotations.tasks import jobs as job_tasks
from annotations.tasks import releases as release_tasks
from tests.browser.conftest import nav
from tests.browser.decide import adjudicate, fill_correction, left_item
from tests.cases.builders import SMALL_GEOMETRY, write_case
from tests.factories import make_personas
from tests.runs.helpers import make_report_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CASE = "GX-J-1"
NAME = "gx-journey"
CT_EDIT = "Wall thickening of the greater curvature; one perigastric node."
CT_SETTLED = "Greater-curvature wall thickening with one perigastric node, no ascites."
BOX_EDIT = [9, 11, 1, 28, 36, 5]
MODEL_REPORT = "Thickened gastric wall; no nodes."
# What the adjudicator does with the dispute of each kind (A: alice accepted, B: bob differed).
SETTLE = {"mcq": "take_b", "label": "take_a", "open": "new", "box": "take_b", "retrieval": "take_a"}


@pytest.fixture
def workers(monkeypatch):
    """The worker's tasks, run as the worker would once their job is committed (no broker)."""
    monkeypatch.setattr(
        import_tasks.benchmark_import_task, "delay", import_tasks.benchmark_import_task
    )
    # A Gastric-X import is planned into one chunk per case, each taken by a worker.
    monkeypatch.setattr(job_tasks.job_chunk_task, "delay", job_tasks.job_chunk_task)
    monkeypatch.setattr(release_tasks.release_build_task, "delay", release_tasks.release_build_task)


def sign_in(page, login, username: str) -> None:
    page.context.clear_cookies()
    login(username)


def upload_and_assign(page, login, tmp_path: Path) -> None:
    write_case(tmp_path / "cases", CASE, phases=SMALL_GEOMETRY)
    archive = shutil.make_archive(str(tmp_path / "upload"), "zip", tmp_path / "cases")
    sign_in(page, login, "dave")
    nav(page, "curate", "Import a benchmark")
    page.fill("#id_name", NAME)
    page.select_option("#id_family", "gastricx")
    page.set_input_files("#id_file", archive)
    page.click("form[data-import-form] button[type=submit]")
    expect(page.locator("[data-imported]")).to_have_text(re.compile(r"^\d+ items imported$"))
    imported = int(page.inner_text("[data-imported]").split()[0])
    assert imported == Item.objects.filter(benchmark__name=NAME).count() > 0
    page.click("[data-next=assign]")
    expect(page).to_have_url(re.compile(rf"/benchmarks/{NAME}/assign/$"))
    page.get_by_role("checkbox", name=re.compile(r"^alice ")).check()
    page.get_by_role("checkbox", name=re.compile(r"^bob ")).check()
    page.click("form.panel button.primary:has-text('Assign')")
    expect(page.locator(".status-counts")).to_contain_text(f"In review {imported}")


def bob_differs(page, item: Item) -> bool:
    """bob's decision on the first item of each kind: a correction or a rejection."""
    form = "[data-review-form]"
    if item.kind in ("label", "retrieval"):
        page.click(f"{form} .verdicts [data-mode-set=reject]")
        page.locator(f"{form} .reason").first.click()
        page.click(f"{form} button[data-verdict=reject]")
        return True
    page.click(f"{form} .verdicts [data-mode-set=edit]")
    if item.kind == "mcq":
        other = next(letter for letter in "ABCDEF" if letter != item.answer)
        fill_correction(page, form, "mcq", other)
    elif item.kind == "open":
        fill_correction(page, form, "open", CT_EDIT)
    else:
        fill_correction(page, form, "box3d", BOX_EDIT)
    page.click(f"{form} button[data-verdict=edit]")
    return True


def review_queue(page, live_server, login, username: str, *, differ: bool) -> dict[str, int]:
    """`username` works the benchmark's queue from its hub to the end; returns, per kind, the
    item `differ` decided otherwise than accepting."""
    sign_in(page, login, username)
    page.goto(f"{live_server.url}/benchmarks/{NAME}/")
    page.click("[data-action=review]")
    differed: dict[str, int] = {}
    decided = 0
    while True:
        expect(page.locator("[data-review-work], .done-state").first).to_be_visible()
        if page.locator(".done-state").count():
            break
        expect(page.locator("html")).to_have_attribute("data-review-keys", "ready")
        item = Item.objects.get(pk=page.get_attribute("[data-review-work]", "data-item"))
        assert item.benchmark.name == NAME  # the benchmark's own queue
        if differ and item.kind not in differed:
            bob_differs(page, item)
            differed[item.kind] = item.pk
        else:
            page.click("[data-review-form] button[data-verdict=accept]")
        left_item(page, "[data-review-work]", item)
        decided += 1
    expect(page.locator(".done-state")).to_contain_text("Your queue is empty")
    assert decided == Item.objects.filter(benchmark__name=NAME).count()
    return differed


def settle_disputes(page, live_server, login) -> set[str]:
    sign_in(page, login, "carol")
    page.goto(f"{live_server.url}/benchmarks/{NAME}/")
    page.click("[data-action=adjudicate]")
    page.click("[data-start]")
    settled: set[str] = set()
    while True:
        expect(page.locator("[data-adjudicate-work], [data-start], .empty").first).to_be_visible()
        if not page.locator("[data-adjudicate-work]").count():
            if page.locator("[data-start]").count():
                page.click("[data-start]")
                continue
            break
        expect(page.locator("html")).to_have_attribute("data-review-keys", "ready")
        item = Item.objects.get(pk=page.get_attribute("[data-adjudicate-work]", "data-item"))
        action = SETTLE[item.kind]
        adjudicate(page, "open", action, value=CT_SETTLED if action == "new" else None)
        left_item(page, "[data-adjudicate-work]", item)
        settled.add(item.kind)
    return settled


def grade_report(page, live_server, login, report: Item) -> None:
    """A session of a model's reports against the reference, alice named its grader."""
    run = make_report_run(report.benchmark, [report], label="model-j", texts=[MODEL_REPORT])
    sign_in(page, login, "dave")
    page.goto(f"{live_server.url}/benchmarks/{NAME}/")
    page.click("[data-action=grading]")
    page.select_option("#id_task", "report_generation")
    page.select_option("#id_run_a", str(run.pk))
    page.select_option("#id_run_b", "")  # against the (adjudicated) reference
    page.get_by_label("alice", exact=True).check()
    page.click("#new-session-form button[type=submit]")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)

    sign_in(page, login, "alice")
    page.goto(f"{live_server.url}/grading/")
    page.click("table.sessions a.button")
    expect(page.locator("#grade-form")).to_have_attribute("data-keyboard", "ready")
    viewer = page.locator("[data-grade-case] #ct-viewer")
    expect(viewer).to_have_attribute("data-loaded", "true", timeout=120_000)
    expect(page.locator("[data-grade-case] .ct-canvas:visible").first).to_be_visible()
    sides = sorted(page.locator(".answer-card .answer-text").all_inner_texts())
    assert sides == sorted([MODEL_REPORT, CT_SETTLED])  # the adjudicated reference
    page.locator("label.pref:has(input[value=left])").click()
    page.locator("label:has(input[name=left_overall][value='4'])").click()
    page.locator("label:has(input[name=right_overall][value='2'])").click()
    page.click("#grade-form button[type=submit]")
    expect(page.get_by_text("Nothing left to grade in this session")).to_be_visible()
    grade = Grade.objects.get(grader__username="alice")
    assert grade.item == report and grade.preference == "left"


def build_release(page, live_server, login) -> zipfile.ZipFile:
    sign_in(page, login, "dave")
    page.goto(f"{live_server.url}/benchmarks/{NAME}/")
    page.click("[data-action=release-new]")
    page.fill("#id_version", "1.0")
    page.click("button:has-text('Preview the release')")
    count = Item.objects.filter(benchmark__name=NAME).count()
    build = page.locator(f"button:has-text('Build the release of {count} items')")
    expect(build).to_be_visible()
    page.check("[data-publish-confirm] input")
    build.click()
    expect(page.get_by_text(f"{count} items published")).to_be_visible()
    with page.expect_download() as download_info:
        page.click("[data-release-archive]")
    archive = zipfile.ZipFile(download_info.value.path())
    assert archive.testzip() is None
    return archive


def archive_text(archive: zipfile.ZipFile) -> str:
    return "\n".join(
        archive.read(name).decode("utf-8", "replace")
        for name in archive.namelist()
        if name.endswith((".tsv", ".json", ".jsonl"))
    )


def boxes_in(document) -> list[list[int]]:
    """Every list of six integers anywhere in a JSON document (the voxel boxes)."""
    if isinstance(document, dict):
        return [box for value in document.values() for box in boxes_in(value)]
    if isinstance(document, list):
        if len(document) == 6 and all(isinstance(v, int) for v in document):
            return [document]
        return [box for value in document for box in boxes_in(value)]
    return []


def test_one_gastricx_case_from_import_to_release_in_the_browser(
    page, live_server, login, tmp_path, workers
):
    make_personas()
    page.set_default_timeout(30_000)
    upload_and_assign(page, login, tmp_path)
    items = Item.objects.filter(benchmark__name=NAME)
    kinds = set(items.values_list("kind", flat=True))
    assert kinds == set(SETTLE)  # every kind of a Gastric-X case
    imported_answers = dict(items.values_list("pk", "answer"))

    assert review_queue(page, live_server, login, "alice", differ=False) == {}
    differed = review_queue(page, live_server, login, "bob", differ=True)
    assert set(differed) == kinds
    disputed = set(items.filter(status=ItemStatus.DISPUTED).values_list("pk", flat=True))
    assert disputed == set(differed.values())
    assert items.exclude(pk__in=disputed).filter(status=ItemStatus.AGREED).count() == (
        items.count() - len(disputed)
    )

    assert settle_disputes(page, live_server, login) == kinds
    settled = {kind: Item.objects.get(pk=pk) for kind, pk in differed.items()}
    assert all(item.status == ItemStatus.ADJUDICATED for item in settled.values())
    assert settled["open"].reference == CT_SETTLED
    assert settled["box"].target["voxel"] == BOX_EDIT
    assert settled["mcq"].answer != imported_answers[differed["mcq"]]  # bob's letter taken
    assert settled["label"].answer == imported_answers[differed["label"]]  # alice's accept

    grade_report(page, live_server, login, settled["open"])

    archive = build_release(page, live_server, login)
    text = archive_text(archive)
    assert CT_SETTLED in text and CT_EDIT not in text  # the settled report, not bob's edit
    localization = json.loads(archive.read(f"{NAME}/{NAME}_localization.json"))
    assert BOX_EDIT in boxes_in(localization)  # bob's box, taken by the adjudicator
    questions = pd.read_csv(archive.open(f"{NAME}/{NAME}.tsv"), sep="\t", dtype=str)
    mcq = settled["mcq"]
    released = questions.loc[questions["question"] == mcq.question, "answer"].tolist()
    assert released == [mcq.answer]
    reports = pd.read_csv(archive.open(f"{NAME}/{NAME}_report.tsv"), sep="\t", dtype=str)
    assert CT_SETTLED in reports["answer"].tolist()
