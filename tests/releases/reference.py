"""Benchmarks and releases whose files were built once by the first exporter (with its digest
worker) and recorded as sha256 per file in `reference/hashes.json`: every later exporter must
write the same bytes. Built from committed images and plain ORM rows (no importer, no random
number), on a database whose sequences start at 1, with fixed dates.

Regenerate the hashes only for an intended format change:
``.venv/bin/python -m pytest tests/releases/test_reference.py --record-reference``.
"""

from __future__ import annotations

import datetime
import hashlib
from pathlib import Path

from annotations.models import (
    Adjudication,
    Benchmark,
    Box,
    Case,
    Item,
    ItemImage,
    ItemRevision,
    Review,
    RevisionReason,
    Volume,
)
from annotations.services.images import image_store

HERE = Path(__file__).with_name("reference")
HASHES = HERE / "hashes.json"
FIXED = datetime.datetime(2026, 11, 30, 8, 15, tzinfo=datetime.UTC)

ENDO_QUOTED = [
    "index", "image", "question", "category", "task", "subtask", "scene", "answer", "dataset",
    "gt", "A", "B", "C", "D", "E", "F",
]  # fmt: skip
ENDO_MINIMAL = ["index", "image", "question", "answer", "A", "B", "C", "D"]
ENDO_JSON = [
    "index", "image", "image_path", "question", "category", "task", "subtask", "scene", "answer",
    "dataset", "gt", "A", "B", "C", "D", "E", "F", "note",
]  # fmt: skip
MEDQDEG = [
    "index", "image", "question", "A", "B", "C", "D", "E", "answer", "modality",
    "degradation_type", "degradation_severity", "source",
]  # fmt: skip
VLMEVAL = ["index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category"]


def _image(number: int):
    path = next(HERE.glob(f"images/frame{number}.*"))
    return image_store(data=path.read_bytes())[0]


def _item(benchmark, index, images=(), **fields) -> Item:
    values = {
        "question": f"Which finding is shown in frame {index}?",
        "options": ["Polyp", "Ulcer", "Normal mucosa", "Bleeding"],
        "answer": "A",
        "status": "agreed",
    }
    values.update(fields)
    item = Item.objects.create(benchmark=benchmark, source_index=index, **values)
    for position, number in enumerate(images):
        ItemImage.objects.create(item=item, image=_image(number), position=position)
    ItemRevision.objects.create(
        item=item, version=1, content=item.content(), reason=RevisionReason.IMPORTED
    )
    return item


def _edit(item, **content) -> None:
    for name, value in content.items():
        setattr(item, name, value)
    item.version += 1
    item.save()
    ItemRevision.objects.create(
        item=item,
        version=item.version,
        replaced_version=item.version - 1,
        content=item.content(),
        reason=RevisionReason.EDITED,
    )


def _endo_quoted(people) -> None:
    bench = Benchmark.objects.create(
        name="endo-quoted", family="endobench", columns=ENDO_QUOTED,
        option_letters=list("ABCDEF"),
    )  # fmt: skip
    common = {"category": "Lesion", "task": "Polyp detection", "scene": "colon"}
    first = _item(bench, 1, [0], split="dev", extra={"gt": "Polyp"}, **common)
    _item(bench, 2, [0], split="dev", dataset="Kvasir", **{**common, "category": "Anatomy"})
    _item(
        bench, 3, [1, 2], split="test", subtask='He said "look"\there',
        question='Tabs\tand "quotes"\nand a newline; =SUM(A1) stays text', **common,
    )  # fmt: skip
    fourth = _item(bench, 4, [3], split="test", answer="C", status="adjudicated", **common)
    _edit(fourth, question="Which size is the polyp (edited)?", answer="B")
    _item(bench, 5, [4], split="dev", status="disputed", **common)
    _item(bench, 6, [5], split="dev", status="rejected", **common)
    _item(bench, 7, [0], split="test", options=["-1", "+2", "@x", "", "", "F opt"], **common)
    Review.objects.create(item=first, reviewer=people["reviewer"], item_version=1, verdict="accept")
    Review.objects.create(
        item=first, reviewer=people["reviewer2"], item_version=1, verdict="reject",
        reason="ambiguous",
    )  # fmt: skip
    Adjudication.objects.create(
        item=first, adjudicator=people["adjudicator"], choice="a", item_version=1
    )
    image = first.item_images.get().image
    Box.objects.create(image=image, label="polyp", x0=2, y0=3, x1=12, y1=13, state="accepted")
    Box.objects.create(image=image, label="lesion", x0=0, y0=0, x1=4, y1=4, state="rejected")
    Box.objects.create(image=image, item=first, label="other", x0=5, y0=5, x1=9, y1=9)


def _endo_minimal() -> None:
    bench = Benchmark.objects.create(
        name="endo-minimal", family="endobench", columns=ENDO_MINIMAL, option_letters=list("ABCD")
    )
    for index in range(1, 6):
        _item(bench, index * 10, [index % 4], category="", answer="ABCD"[index % 4])


def _endo_json() -> None:
    bench = Benchmark.objects.create(
        name="endo-json", family="endobench", columns=ENDO_JSON, option_letters=list("ABCDEF")
    )
    for index in range(1, 5):
        _item(
            bench, index, [index], category="Landmark", task="Landmark identification",
            extra={"image_path": f"EndoBench-Images/f{index}.jpg", "gt": "Polyp", "note": "n"},
        )  # fmt: skip


def _medqdeg() -> None:
    bench = Benchmark.objects.create(
        name="medq", family="medqdeg", columns=MEDQDEG, option_letters=list("ABCDE")
    )
    fields = {"modality": "CT", "source": "LIDC", "category": "Chest"}
    clean = _item(bench, 1, [0], degradation_severity="clean", **fields)
    for index, (kind, severity, seed) in enumerate(
        [("gaussian_noise", "mild", 11), ("gaussian_noise", "severe", 12), ("blur", "mild", 13)],
        start=2,
    ):
        _item(
            bench, index, [index], clean_twin=clean, degradation_type=kind,
            degradation_severity=severity, degradation_seed=seed,
            degradation_params={"sigma": 0.25 * index, "kernel": [3, 3]}, **fields,
        )  # fmt: skip
    _item(bench, 9, [5], modality="MRI", source="BraTS", category="Brain")


def _vlmeval() -> None:
    bench = Benchmark.objects.create(
        name="vlm-multi", family="vlmeval", columns=VLMEVAL, option_letters=list("ABCD")
    )
    _item(bench, 1, [0, 1], hint="Two frames", category="Compare")
    _item(bench, 2, [0, 1], hint="Same two frames", category="Compare")
    _item(bench, 3, [2], category="Single", l2_category="one")
    _item(bench, 4, [], category="Text only")
    _item(bench, 5, [1, 0], category="Compare")


def _gastricx() -> None:
    bench = Benchmark.objects.create(name="gastric", family="gastricx", columns=[])
    case = Case.objects.create(
        benchmark=bench, case_id="GX-7f3a", tnm="T2N1M0", endoscopy_image=_image(2)
    )
    direction = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    for phase, origin in (
        ("arterial", [-120.5, -98.25, -40.0]),
        ("venous", [-120.5, -98.25, -39.5]),
    ):
        volume = Volume.objects.create(
            case=case, phase=phase, size_x=32, size_y=24, size_z=10, spacing=[0.75, 0.75, 2.5],
            origin=origin, direction=direction, cache_path=f"ct/{phase}.npy",
            series_uid=f"2.25.{len(phase)}",
        )  # fmt: skip
        Box.objects.create(
            volume=volume, label="tumor", x0=4, y0=5, z0=1, x1=14, y1=15, z1=6, state="accepted"
        )
        Box.objects.create(
            volume=volume, label="lymph_node", x0=1, y0=1, z0=0, x1=3, y1=4, z1=2,
            state="rejected",
        )  # fmt: skip
    Box.objects.create(image=case.endoscopy_image, label="tumor", x0=10, y0=8, x1=30, y1=28)
    tasks = [("VQA", "location"), ("TNM", "T stage"), ("Localization", "tumor")]
    for index, (task, subtask) in enumerate(tasks, start=1):
        _item(bench, index, [2], case=case, task=task, subtask=subtask, split="test")


def build_benchmarks(people) -> None:
    _endo_quoted(people)
    _endo_minimal()
    _endo_json()
    _medqdeg()
    _vlmeval()
    _gastricx()
    ItemRevision.objects.update(created_at=FIXED)
    Adjudication.objects.update(created_at=FIXED)


# (release name, benchmark, release_create arguments, release_build arguments)
RELEASES = [
    ("EndoQuoted", "endo-quoted", {}, {}),
    ("EndoQuotedAll", "endo-quoted", {"include_all": True}, {}),
    ("EndoWithheld", "endo-quoted", {"withhold_split": "test"}, {"local_layout": True}),
    ("EndoParts", "endo-quoted", {"include_all": True}, {"part_bytes": 1500}),
    ("EndoFiltered", "endo-quoted", {"filters": {"split": ["dev"]}}, {}),
    ("EndoMinimal", "endo-minimal", {"include_all": True}, {}),
    ("EndoJson", "endo-json", {}, {"local_layout": True}),
    ("MedQ", "medq", {"include_all": True}, {}),
    ("VlmMulti", "vlm-multi", {"include_all": True}, {"part_bytes": 2000, "local_layout": True}),
    ("Gastric", "gastric", {}, {}),
]
# Plain snapshot exports (`export_release --out`): (folder, benchmark, include_all)
SNAPSHOTS = [("snap-endo", "endo-quoted", False), ("snap-vlm", "vlm-multi", True)]


def folder_hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
