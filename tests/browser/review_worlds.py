"""Items of every kind, assigned to two reviewers, for the review and adjudication matrices.

Gastric-X kinds come from a real import of two small cases (so the TNM label set has two
labels to choose from); multiple choice and the 2D (endoscopy image) box are made directly.
"""

from __future__ import annotations

from pathlib import Path

from annotations.models import Item
from annotations.services.cases import gastricx_import
from annotations.services.degrade import benchmark_degrade
from annotations.services.pair_review import pair_review_submit
from annotations.services.review import assignments_create, review_submit
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case
from tests.factories import jpeg_bytes, make_benchmark, make_item, make_personas
from tests.pairs.helpers import make_pair_benchmark

# (item kind, Gastric-X task, category): the item each matrix row works on.
GASTRIC_KINDS = {
    "label": ("classification", "tnm"),
    "label_n": ("classification", "n"),
    "open": ("report_generation", "ct"),
    "box3d": ("localization", "venous"),
    "retrieval": ("retrieval", "diagnostic"),
}
KINDS = ("mcq", "box2d", *GASTRIC_KINDS)
# A degraded twin of a MedQ-DEG item: judged on its pair page, adjudicated as its kind (mcq).
PAIR = "pair"
# What each kind's correction sets (the second value a reviewer B proposes).
CORRECTED = {
    "mcq": ("C", "D"),
    "label": ("T4aN2M0", "T3N1M0"),
    "label_n": ("N2", "N1"),
    "open": ("Wall thickening with two perigastric nodes.", "Wall thickening. No ascites."),
    "box3d": ([10, 12, 1, 20, 30, 5], [12, 14, 2, 22, 32, 6]),
    "box2d": ([10, 10, 40, 30], [12, 12, 44, 36]),
}
EDITABLE = ("mcq", "label", "label_n", "open", "box3d", "box2d")


def gastric_benchmark(root: Path, people: dict):
    write_case(root, "GX-M-1", phases=SMALL_GEOMETRY)
    write_case(
        root,
        "GX-M-2",
        phases=SMALL_GEOMETRY,
        document=case_document("GX-M-2", tnm="T4aN2M0"),
    )
    return gastricx_import(path=root, name="gx-matrix", user=people["curator"])


def world(kind: str, tmp_path: Path) -> tuple[dict, Item]:
    """The personas and one item of `kind`, assigned to alice (A) and bob (B)."""
    people = make_personas()
    reviewers = [people["reviewer"], people["reviewer2"]]
    if kind == PAIR:
        benchmark = make_pair_benchmark(size=64)
        benchmark_degrade(benchmark=benchmark, kinds="gaussian_noise", severities="mild", seed=0)
        item = Item.objects.filter(clean_twin__isnull=False).order_by("source_index").first()
        filters = None
    elif kind in GASTRIC_KINDS:
        benchmark = gastric_benchmark(tmp_path / "cases", people)
        task, category = GASTRIC_KINDS[kind]
        item = Item.objects.get(
            benchmark=benchmark, task=task, category=category, case__case_id="GX-M-1"
        )
        filters = {"task": task, "category": category}
    else:
        benchmark = make_benchmark(f"matrix-{kind}", family="endobench")
        fields = {}
        if kind == "box2d":
            fields = {
                "kind": "box",
                "question": "Locate the polyp on the image.",
                "options": [],
                "answer": "",
                "target": {"label": "polyp", "image": "endoscopy", "box": [8, 8, 40, 30]},
            }
        item = make_item(benchmark, image=jpeg_bytes(size=(64, 48)), **fields)
        filters = None
    assignments_create(benchmark=benchmark, reviewers=reviewers, per_item=2, filters=filters)
    return people, Item.objects.get(pk=item.pk)


def content_of(kind: str, value) -> dict:
    """The proposed content a service takes for a correction to `value`."""
    if kind == "mcq":
        return {"question": "", "options": [], "answer": value}
    if kind in ("label", "label_n"):
        return {"answer": value}
    if kind == "open":
        return {"reference": value}
    return {"box": value} if kind == "box2d" else {"voxel": value}


def disputed(kind: str, tmp_path: Path) -> tuple[dict, Item]:
    """An item of `kind` that alice and bob decided differently (A: alice, B: bob)."""
    people, item = world(kind, tmp_path)
    if kind == PAIR:  # alice: still answerable; bob: not
        for reviewer, answerable in ((people["reviewer"], True), (people["reviewer2"], False)):
            pair_review_submit(
                item=item,
                reviewer=reviewer,
                version=item.version,
                answerable=answerable,
                realism=4,
                severity_judgement="right",
            )
        item.refresh_from_db()
        assert item.status == "disputed"
        return people, item
    if kind in EDITABLE:
        first, second = CORRECTED[kind]
        decisions = [("edit", first), ("edit", second)]
    else:
        decisions = [("accept", None), ("reject", None)]
    for reviewer, (verdict, value) in zip(
        (people["reviewer"], people["reviewer2"]), decisions, strict=True
    ):
        content = None
        if verdict == "edit":
            content = content_of(kind, value)
            if kind == "mcq":
                content = {"question": item.question, "options": item.options, "answer": value}
        review_submit(
            item=item,
            reviewer=reviewer,
            verdict=verdict,
            version=item.version,
            content=content,
            reason="wrong_answer" if verdict == "reject" else "",
        )
    item.refresh_from_db()
    assert item.status == "disputed"
    return people, item
