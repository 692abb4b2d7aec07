"""A split is decided per case (issue 29): with `withhold_split=test`, a case with any item in
the test split is withheld whole, and nothing of it (reports, boxes on every phase, labels) is in
a public file; a retrieval query that is a withheld report is a conflict the curator resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotations.models import Box, Item, Volume
from annotations.selectors.releases import release_preview
from annotations.services.errors import DomainError
from annotations.services.releases import release_build, release_create
from tests.runs.gastric_tasks import (
    ENDOSCOPY_TRUTH,
    REPORTS,
    VOXEL_TRUTH,
    make_task_benchmark,
)

pytestmark = pytest.mark.django_db

STOMACH = [1, 1, 0, 40, 30, 9]  # another box of the case, on the same phase
LESION = [1, 1, 3, 3]  # a 2D box on the case's endoscopy image
TNM_LABELS = ["T1N0M0", "T2N0M0", "T3N1M0", "T3N2M0"]
NOT_RETRIEVAL = ["classification", "localization", "report_generation", "vqa"]


@pytest.fixture
def split_case(settings, tmp_path):
    """Case GX-0's items split test/train: its CT report and its TNM label in test, the rest
    (the other report, the T-stage labels, the boxes, its retrieval pair) in train."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.RELEASES_ROOT = str(tmp_path / "releases")
    made = make_task_benchmark()
    benchmark = made.benchmark
    benchmark.label_sets = {"t": ["T1", "T2", "T3", "T4"], "tnm": TNM_LABELS}
    benchmark.save()
    tnm = Item.objects.create(
        benchmark=benchmark, source_index=50, case=made.items["vqa"][0].case, kind="label",
        question="What is the TNM stage?", answer="T3N2M0", target={"field": "tnm"},
    )  # fmt: skip
    for kind, task in (("mcq", "vqa"), ("label", "classification"), ("open", "report_generation"),
                       ("box", "localization"), ("retrieval", "retrieval")):  # fmt: skip
        Item.objects.filter(benchmark=benchmark, kind=kind).update(task=task)
    Item.objects.filter(benchmark=benchmark).update(status="agreed", split="train")
    first_report = made.items["report_generation"][0]
    Item.objects.filter(pk__in=[first_report.pk, tnm.pk]).update(split="test")
    volume = Volume.objects.get()
    x0, y0, z0, x1, y1, z1 = STOMACH
    Box.objects.create(volume=volume, label="stomach", x0=x0, y0=y0, z0=z0, x1=x1, y1=y1, z1=z1)
    x0, y0, z0, x1, y1, z1 = VOXEL_TRUTH
    Box.objects.create(volume=volume, label="tumor", x0=x0, y0=y0, z0=z0, x1=x1, y1=y1, z1=z1)
    photo = first_report.case.endoscopy_image
    Box.objects.create(image=photo, label="lesion", x0=1, y0=1, x1=3, y1=3)
    return made


def _numbers(values) -> re.Pattern:
    """A list of numbers as any public file may write it (JSON, a TSV cell, floats)."""
    return re.compile(r"\D" + r"(?:\.0)?\s*,\s*".join(str(v) for v in values) + r"(?:\.0)?\D")


def test_a_case_with_a_withheld_item_is_withheld_whole_and_the_preview_says_so(split_case):
    preview = release_preview(
        split_case.benchmark, include_all=False, filters={}, withhold_split="test"
    )
    case_items = Item.objects.filter(case__case_id="GX-0").count()
    assert preview.withheld_cases == 1
    assert preview.withheld_answers == case_items
    assert len(preview.conflicts) == 1 and "GX-0" in preview.conflicts[0]
    retrieval = Item.objects.get(case__case_id="GX-0", kind="retrieval")
    assert f"#{retrieval.source_index}" in preview.conflicts[0]


def test_a_retrieval_query_that_is_a_withheld_report_refuses_the_release(split_case):
    with pytest.raises(DomainError) as refused:
        release_create(
            benchmark=split_case.benchmark, name="GxSplit", version="1", withhold_split="test"
        )
    assert refused.value.code == "withheld_conflict" and "GX-0" in str(refused.value)


def test_the_preview_page_names_the_conflict_and_offers_no_build(split_case, client, people):
    client.force_login(people["curator"])
    fields = {"name": "GxSplit", "version": "1", "withhold_split": "test"}
    page = client.post(reverse("release-new", args=[split_case.benchmark.name]), fields)
    html = page.content.decode()
    assert page.status_code == 200
    assert "rel-conflicts" in html and "GX-0" in html
    assert 'name="confirm"' not in html


def test_nothing_of_a_withheld_case_is_in_any_public_file(split_case):
    # The curator resolves the conflict by leaving the retrieval task out.
    release = release_create(
        benchmark=split_case.benchmark, name="GxSplit", version="1",
        filters={"task": NOT_RETRIEVAL}, withhold_split="test",
    )  # fmt: skip
    release = release_build(release=release)
    assert release.status == "published", release.error
    folder = Path(release.path)
    public = [
        path
        for path in folder.rglob("*")
        if path.is_file() and not path.name.endswith("_test_answers.json")
    ]
    assert {p.name for p in public} >= {"GxSplit.tsv", "GxSplit.json", "GxSplit_test.tsv"}
    texts = {path.name: path.read_text(errors="replace") for path in public}
    # The reports state the case's stage; its TNM label is an option text (public), never its
    # answer (below).
    withheld_texts = [REPORTS[0][0], REPORTS[1][0]]
    boxes = [VOXEL_TRUTH, STOMACH, ENDOSCOPY_TRUTH, LESION]
    # COCO writes (x, y, width, height).
    boxes += [[b[0], b[1], b[2] - b[0], b[3] - b[1]] for b in (ENDOSCOPY_TRUTH, LESION)]
    for name, text in texts.items():
        for withheld in withheld_texts:
            assert withheld not in text, (name, withheld)
        for box in boxes:
            assert not _numbers(box).search(text), (name, box)
    items = json.loads(texts["GxSplit.json"])["items"]
    of_case = [i for i in items if i["source"]["case_id"] == "GX-0" or i.get("withheld")]
    assert of_case and all(i.get("withheld") for i in of_case)
    tnm = next(i for i in items if i["index"] == 50)
    assert tnm["withheld"] and tnm["answer"] is None and tnm["answer_text"] is None
    answers = json.loads((folder / "GxSplit_test_answers.json").read_text())["answers"]
    indexes = {a["index"] for a in answers}
    case_indexes = set(
        Item.objects.filter(case__case_id="GX-0").exclude(kind="retrieval")
        .values_list("source_index", flat=True)
    )  # fmt: skip
    assert indexes == case_indexes
