"""A small Gastric-X benchmark built from rows (no DICOM): a case with one venous volume, an
out-of-range indicator, three reports and one item of each non-multiple-choice kind, every item
assigned to reviewer (slot 1) and reviewer2 (slot 2)."""

from __future__ import annotations

from dataclasses import dataclass

from annotations.formats.gastricx import tnm_label_sets
from annotations.imaging import ct
from annotations.models import Box, Case, Family, Indicator, Item, Volume
from annotations.services.review import assignments_create
from tests.factories import make_benchmark, make_item

REPORTS = {
    "diagnostic": "Adenocarcinoma of the gastric body, cT3N1M0.",
    "ct": "Wall thickening along the greater curvature with two perigastric nodes.",
    "endoscopy": "Ulcerated mass in the mid gastric body.",
}


@dataclass
class World:
    case: Case
    volume: Volume
    box: Box
    report: Item
    label: Item
    localization: Item
    retrieval: Item


def gastric_world(people: dict, *, name: str = "gxr") -> World:
    benchmark = make_benchmark(name, family=Family.GASTRICX, label_sets=tnm_label_sets(["T3N1M0"]))
    case = Case.objects.create(benchmark=benchmark, case_id="GX-R-1", tnm="T3N1M0", reports=REPORTS)
    Indicator.objects.create(
        case=case,
        position=0,
        name="CEA",
        value=12.4,
        unit="ng/mL",
        reference_low=0,
        reference_high=5,
    )
    Indicator.objects.create(
        case=case, position=1, name="Hemoglobin", value=131, unit="g/L", reference_low=120,
        reference_high=160,
    )  # fmt: skip
    volume = Volume.objects.create(
        case=case, phase="venous", size_x=64, size_y=48, size_z=9, spacing=[0.8, 0.7, 5.0],
        origin=[-251.6, 181.4, -890.0], direction=list(ct.IDENTITY_DIRECTION),
        cache_path="volumes/none.npy",
    )  # fmt: skip
    voxel = [10, 12, 2, 30, 40, 6]
    box = Box.objects.create(
        volume=volume, label="tumor", x0=10, y0=12, z0=2, x1=30, y1=40, z1=6, source="imported",
        mm=ct.box_voxel_to_mm(voxel, ct.VolumeGeometry.of(volume)),
    )  # fmt: skip
    report = make_item(
        benchmark, case=case, kind="open", question="Write the CT report of this case.",
        options=[], answer="", reference=REPORTS["ct"], target={"report": "ct"},
        task="report_generation", category="ct",
    )  # fmt: skip
    label = make_item(
        benchmark, case=case, kind="label", question="What is the T stage of this case?",
        options=[], answer="T3", target={"field": "t"}, task="classification", category="t",
    )  # fmt: skip
    localization = make_item(
        benchmark, case=case, kind="box", question="Localize the tumor on the venous phase CT.",
        options=[], answer="", task="localization", category="venous",
        target={"label": "tumor", "phase": "venous", "voxel": voxel, "mm": box.mm, "box": box.pk},
    )  # fmt: skip
    retrieval = make_item(
        benchmark, case=case, kind="retrieval", question="Does this CT report belong to this case?",
        options=[], answer="", reference=REPORTS["ct"], target={"report": "ct"}, task="retrieval",
    )  # fmt: skip
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    fresh = {item.pk: item for item in Item.objects.filter(case=case)}
    return World(
        case=case,
        volume=volume,
        box=box,
        report=fresh[report.pk],
        label=fresh[label.pk],
        localization=fresh[localization.pk],
        retrieval=fresh[retrieval.pk],
    )
