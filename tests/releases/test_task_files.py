"""A Gastric-X release per task: NAME.tsv (VQA + classification as multiple choice),
NAME_report.tsv, NAME_localization.json, NAME_retrieval.json, read back as their users would."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import string
from pathlib import Path

import pandas as pd
import pytest
from django.urls import reverse

from annotations.formats import taskfiles
from annotations.imaging.window import render_slice_png
from annotations.models import Box, Image, Item, ItemImage, Volume
from annotations.selectors.cases import volume_voxels
from annotations.services.cases import gastricx_import
from annotations.services.errors import DomainError
from annotations.services.releases import (
    ExportOptions,
    release_build,
    release_create,
    release_export,
)
from annotations.services.runs.tasks import CT_WINDOW
from tests.cases.builders import SMALL_GEOMETRY, write_case
from tests.factories import make_item, make_personas
from tests.releases.helpers import edit
from tests.releases.reference import folder_hashes
from tests.runs.gastric_tasks import (
    CLASSIFICATION,
    ENDOSCOPY_TRUTH,
    REPORTS,
    T_LABELS,
    VOXEL_TRUTH,
    make_task_benchmark,
)

pytestmark = pytest.mark.django_db

# An oblique series: rows run along -x, columns along +y (a 90° turn about z), uneven spacing.
SPACING = [0.8, 0.7, 2.5]
ORIGIN = [-120.5, 80.25, -300.0]
DIRECTION = [0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
TNM_LABELS = ["T1N0M0", "T2N0M0", "T2N1M0", "T3N1M0", "T3N2M0", "T4N2M1"]


def lps(x: int, y: int, z: int) -> list[float]:
    """By hand: origin + direction · (index × spacing), for DIRECTION above."""
    sx, sy, sz = x * SPACING[0], y * SPACING[1], z * SPACING[2]
    return [ORIGIN[0] - sy, ORIGIN[1] + sx, ORIGIN[2] + sz]


@pytest.fixture
def made(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    made = make_task_benchmark()
    benchmark = made.benchmark
    benchmark.label_sets = {"t": T_LABELS, "tnm": TNM_LABELS}
    benchmark.save()
    Volume.objects.update(spacing=SPACING, origin=ORIGIN, direction=DIRECTION, series_uid="2.25.9")
    made.items["classification"].append(
        make_item(
            benchmark, index=50, case=made.items["vqa"][0].case, kind="label", options=[],
            question="What is the TNM stage?", answer="T3N2M0", target={"field": "tnm"},
        )
    )  # fmt: skip
    diagnostic, ct_report = made.items["report_generation"]
    Item.objects.filter(pk=diagnostic.pk).update(target={"report": "diagnostic"})
    Item.objects.filter(benchmark=benchmark).update(status="agreed", split="dev", task="t")
    Item.objects.filter(kind="open").update(task="report_generation", subtask="ct")
    # The reviewed content is what goes out: a report edited after import.
    edit(Item.objects.get(pk=ct_report.pk), reference="Edited: " + REPORTS[1][0])
    make_item(benchmark, index=60, kind="open", reference="pending text", status="pending")
    return made


def export(made, folder: Path, **options):
    return release_export(
        benchmark=made.benchmark,
        out_dir=folder,
        name="GxTasks",
        options=ExportOptions.release(version="1.0", **options),
    )


def images_of(cell: str) -> list[bytes]:
    values = ast.literal_eval(cell)
    assert isinstance(values, list)
    return [base64.b64decode(value) for value in values]


def stored(image: Image) -> bytes:
    with image.file.open("rb") as handle:
        return handle.read()


def test_nametsv_holds_vqa_and_classification_items_as_lettered_options(made, tmp_path):
    export(made, tmp_path / "r")
    frame = pd.read_csv(tmp_path / "r" / "GxTasks.tsv", sep="\t")

    labels = [item.source_index for item in made.items["classification"]]
    assert sorted(frame["index"]) == sorted([made.items["vqa"][0].source_index, *labels])
    assert [c for c in frame.columns if len(c) == 1] == list("ABCDEF")  # E, F for the TNM set
    rows = frame.set_index("index")
    for item, (truth, _letter) in zip(made.items["classification"], CLASSIFICATION, strict=False):
        row = rows.loc[item.source_index]
        assert [row[letter] for letter in "ABCD"] == T_LABELS
        assert row["answer"] == string.ascii_uppercase[T_LABELS.index(truth)]
        assert pd.isna(row["E"])  # an unused option is an empty cell
    tnm = rows.loc[50]
    assert [tnm[letter] for letter in "ABCDEF"] == TNM_LABELS
    assert tnm["answer"] == "E"
    items = json.loads((tmp_path / "r" / "GxTasks.json").read_text())["items"]
    by_index = {item["index"]: item for item in items}
    assert by_index[50]["options"] == TNM_LABELS and by_index[50]["answer"] == "E"
    assert by_index[50]["kind"] == "label" and by_index[50]["answer_text"] == "T3N2M0"
    assert 60 not in by_index  # not curated


def test_the_report_file_is_vlmevalkits_open_vqa_layout_with_image_lists(made, tmp_path):
    export(made, tmp_path / "r")
    frame = pd.read_csv(tmp_path / "r" / "GxTasks_report.tsv", sep="\t")

    assert list(frame.columns) == [
        "index", "image", "question", "answer", "category", "l2-category", "split",
    ]  # fmt: skip
    diagnostic, ct_report = made.items["report_generation"]
    rows = frame.set_index("index")
    assert rows.loc[diagnostic.source_index, "answer"] == REPORTS[0][0]
    assert rows.loc[ct_report.source_index, "answer"] == "Edited: " + REPORTS[1][0]
    assert rows.loc[ct_report.source_index, "category"] == "report_generation"
    assert rows.loc[ct_report.source_index, "l2-category"] == "ct"
    assert 60 not in rows.index
    volume = Volume.objects.get()
    middle = render_slice_png(volume_voxels(volume), volume.size_z // 2, *CT_WINDOW)
    endoscopy = stored(diagnostic.case.endoscopy_image)
    # The diagnostic report: the endoscopy image and each phase's middle slice, as runs show them.
    assert images_of(rows.loc[diagnostic.source_index, "image"]) == [endoscopy, middle]
    # The CT report: the CT only, still a list (of one image).
    assert images_of(rows.loc[ct_report.source_index, "image"]) == [middle]
    raw = (tmp_path / "r" / "GxTasks_report.tsv").read_text().splitlines()
    assert all(cell.startswith('"') and cell.endswith('"') for cell in raw[1].split("\t"))


def test_localization_boxes_are_in_pixels_voxels_and_lps_millimetres(made, tmp_path):
    export(made, tmp_path / "r")
    found = json.loads((tmp_path / "r" / "GxTasks_localization.json").read_text())

    assert found["schema"] == taskfiles.LOCALIZATION_SCHEMA and found["description"]["boxes_3d"]
    endoscopy_item, ct_item = made.items["localization"]
    (box_3d,) = found["boxes_3d"]
    x0, y0, z0, x1, y1, z1 = VOXEL_TRUTH
    assert box_3d["item_index"] == ct_item.source_index
    assert box_3d["voxel"] == VOXEL_TRUTH and box_3d["phase"] == "venous"
    assert box_3d["mm"][0] == pytest.approx(lps(x0, y0, z0))
    assert box_3d["mm"][1] == pytest.approx(lps(x1 - 1, y1 - 1, z1 - 1))
    assert box_3d["mm"][1] == pytest.approx([-140.8, 103.45, -290.0])
    images = {image["id"]: image for image in found["images"]}
    boxes = {box["item_index"]: box for box in found["annotations"]}
    ct_box = boxes[ct_item.source_index]
    slice_image = images[ct_box["image_id"]]
    assert (slice_image["case_id"], slice_image["phase"], slice_image["slice"]) == (
        "GX-0",
        "venous",
        3,
    )
    assert (slice_image["width"], slice_image["height"]) == (48, 40)
    assert ct_box["bbox"] == [x0, y0, x1 - x0, y1 - y0]
    flat = boxes[endoscopy_item.source_index]
    left, top, right, bottom = ENDOSCOPY_TRUTH
    assert flat["bbox"] == [left, top, right - left, bottom - top]
    photo = images[flat["image_id"]]
    assert photo["sha256"] == endoscopy_item.case.endoscopy_image.sha256
    assert (photo["width"], photo["height"]) == (32, 24)
    category = {c["id"]: c["name"] for c in found["categories"]}
    assert category[flat["category_id"]] == category[ct_box["category_id"]] == "tumor"
    assert [item["index"] for item in found["items"]] == [
        endoscopy_item.source_index, ct_item.source_index,
    ]  # fmt: skip


def test_retrieval_pairs_name_their_case_and_the_case_side_images(made, tmp_path):
    export(made, tmp_path / "r")
    found = json.loads((tmp_path / "r" / "GxTasks_retrieval.json").read_text())

    assert found["schema"] == taskfiles.RETRIEVAL_SCHEMA and set(found["description"]) == {
        "cases", "pairs",
    }  # fmt: skip
    pairs = [(p["index"], p["case_id"], p["report_kind"], p["report"]) for p in found["pairs"]]
    assert pairs == [
        (item.source_index, f"GX-{n}", "diagnostic", f"Report of case {word}.")
        for n, (item, word) in enumerate(
            zip(made.items["retrieval"], ["zero", "one", "two"], strict=True)
        )
    ]
    cases = {case["case_id"]: case["images"] for case in found["cases"]}
    first = made.items["retrieval"][0].case
    assert cases["GX-0"] == [
        {"image": "endoscopy", "sha256": first.endoscopy_image.sha256},
        {"phase": "venous", "series_uid": "2.25.9", "slice": 4},
    ]
    assert len(cases["GX-2"]) == 1


def test_the_manifest_lists_every_file_with_digests_and_counts(made, tmp_path):
    manifest = export(made, tmp_path / "r").manifest

    names = {"GxTasks" + s for s in (".tsv", ".json", "_coco.json", "_report.tsv")}
    names |= {"GxTasks_localization.json", "GxTasks_retrieval.json"}
    assert set(manifest["files"]) == names
    for name, digests in manifest["files"].items():
        data = (tmp_path / "r" / name).read_bytes()
        assert digests["md5"] == hashlib.md5(data).hexdigest()
        assert digests["sha256"] == hashlib.sha256(data).hexdigest()
        assert digests["bytes"] == len(data)
    layout = manifest["layout"]
    assert layout["tsv_rows"] == 6
    assert layout["report"] == {"tsv": "GxTasks_report.tsv", "rows": 2}
    assert layout["localization"]["json"] == "GxTasks_localization.json"
    assert (layout["localization"]["boxes_2d"], layout["localization"]["boxes_3d"]) == (2, 1)
    assert layout["retrieval"] == {"json": "GxTasks_retrieval.json", "pairs": 3, "cases": 3}
    assert manifest["counts"]["kind"] == {"box": 2, "label": 5, "mcq": 1, "open": 2, "retrieval": 3}
    assert manifest["items"] == 13


def test_a_rebuild_writes_the_same_bytes(made, tmp_path):
    export(made, tmp_path / "a")
    export(made, tmp_path / "b")

    first, second = folder_hashes(tmp_path / "a"), folder_hashes(tmp_path / "b")
    assert len(first) == 7 and first == second


def test_a_withheld_split_leaves_no_answer_of_any_kind_in_the_public_files(made, tmp_path):
    endoscopy_item, ct_item = made.items["localization"]
    label, report, pair = (
        made.items["classification"][1], made.items["report_generation"][0], made.items["retrieval"][1],
    )  # fmt: skip
    withheld = [label, report, pair, endoscopy_item, ct_item]
    Item.objects.filter(pk__in=[i.pk for i in withheld]).update(split="test")
    volume = Volume.objects.get()
    x0, y0, z0, x1, y1, z1 = VOXEL_TRUTH  # the target also drawn as a box of the case
    Box.objects.create(volume=volume, label="tumor", x0=x0, y0=y0, z0=z0, x1=x1, y1=y1, z1=z1)
    Box.objects.create(volume=volume, label="stomach", x0=1, y0=1, z0=0, x1=40, y1=30, z1=9)
    left, top, right, bottom = ENDOSCOPY_TRUTH  # and on the endoscopy image
    photo = endoscopy_item.case.endoscopy_image
    Box.objects.create(image=photo, label="tumor", x0=left, y0=top, x1=right, y1=bottom)
    Box.objects.create(image=photo, label="lesion", x0=1, y0=1, x1=3, y1=3)
    ItemImage.objects.create(item=made.items["vqa"][0], image=photo, position=1)
    folder = tmp_path / "r"
    manifest = export(made, folder, withhold_split="test").manifest

    public = [folder / n for n in manifest["files"] if not n.endswith("_test_answers.json")]
    text = {path.name: path.read_text() for path in public}
    assert REPORTS[0][0] not in "".join(text.values())
    items = {i["index"]: i for i in json.loads(text["GxTasks.json"])["items"]}
    assert items[report.source_index]["reference"] is None
    assert items[label.source_index]["answer"] is None
    assert items[ct_item.source_index]["target"] == {"label": "tumor", "phase": "venous"}
    assert items[endoscopy_item.source_index]["target"] == {"label": "tumor", "image": "endoscopy"}
    assert items[pair.source_index]["source"]["case_id"] is None
    # The split is decided per case: GX-0 has withheld items, so it is withheld whole, its
    # target box and its other boxes (on every phase, and on its endoscopy image) with it.
    for item in items.values():
        boxes = [b["voxel"] for block in item["volumes"] for b in block["boxes"]]
        assert VOXEL_TRUTH not in boxes and [1, 1, 0, 40, 30, 9] not in boxes
    assert items[1]["withheld"] and items[1]["volumes"][0]["phase"] == "venous"
    assert [b["pixels"] for b in items[1]["boxes"]] == []
    coco = json.loads(text["GxTasks_coco.json"])
    assert coco["annotations"] == []
    localization = json.loads(text["GxTasks_localization.json"])
    assert localization["boxes_3d"] == [] and localization["annotations"] == []
    assert {i["index"] for i in localization["items"]} == {
        endoscopy_item.source_index,
        ct_item.source_index,
    }
    retrieval = json.loads(text["GxTasks_retrieval.json"])
    hidden_pair = next(p for p in retrieval["pairs"] if p["index"] == pair.source_index)
    assert hidden_pair["case_id"] is None and hidden_pair["report"] == "Report of case one."
    assert "GX-1" in {case["case_id"] for case in retrieval["cases"]}  # still a candidate
    test_tsv = pd.read_csv(folder / "GxTasks_test.tsv", sep="\t")
    case_rows = sorted(  # every multiple-choice and label item of the withheld case GX-0
        Item.objects.filter(case=label.case, kind__in=["mcq", "label"]).values_list(
            "source_index", flat=True
        )
    )
    assert list(test_tsv["index"]) == case_rows and "answer" not in test_tsv.columns
    report_test = pd.read_csv(folder / "GxTasks_report_test.tsv", sep="\t")
    both_reports = [r.source_index for r in made.items["report_generation"]]  # one case
    assert list(report_test["index"]) == both_reports
    assert "answer" not in report_test.columns
    public_reports = pd.read_csv(folder / "GxTasks_report.tsv", sep="\t")
    assert report.source_index not in set(public_reports["index"])
    answers = {
        a["index"]: a
        for a in json.loads((folder / "GxTasks_test_answers.json").read_text())["answers"]
    }
    assert answers[label.source_index]["answer"] == "B"  # T2 of T1..T4
    assert answers[report.source_index]["answer"] == REPORTS[0][0]
    assert answers[pair.source_index]["case_id"] == "GX-1"
    assert answers[ct_item.source_index]["box_3d"]["voxel"] == VOXEL_TRUTH
    assert answers[ct_item.source_index]["image"]["slice"] == 3
    assert answers[endoscopy_item.source_index]["box"] == ENDOSCOPY_TRUTH


def test_a_label_set_of_more_than_26_labels_is_refused_naming_it(made, tmp_path):
    benchmark = made.benchmark
    benchmark.label_sets = {**benchmark.label_sets, "tnm": [f"S{n}" for n in range(27)]}
    benchmark.save()
    Item.objects.filter(source_index=50).update(answer="S3")

    with pytest.raises(DomainError, match="'tnm' holds 27 labels"):
        release_create(benchmark=benchmark, name="GxTasks", version="1.0")
    with pytest.raises(DomainError, match="'tnm'"):
        export(made, tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_a_label_outside_its_set_or_a_missing_set_is_refused(made, tmp_path):
    Item.objects.filter(source_index=50).update(answer="T9N9M9")
    with pytest.raises(DomainError, match="T9N9M9"):
        export(made, tmp_path / "r")
    benchmark = made.benchmark
    benchmark.label_sets = {"t": T_LABELS}
    benchmark.save()
    with pytest.raises(DomainError, match="'tnm'"):
        release_create(benchmark=benchmark, name="GxTasks", version="1.0")


def test_a_published_release_shows_and_serves_every_task_file(made, tmp_path, settings, client):
    settings.RELEASES_ROOT = str(tmp_path / "releases")
    release = release_create(benchmark=made.benchmark, name="GxTasks", version="2.0")
    release = release_build(release=release)
    assert release.status == "published", release.error
    assert release.item_count == 13
    client.force_login(make_personas()["curator"])

    page = client.get(reverse("release", args=[release.pk])).content.decode()
    for name in ("_report.tsv", "_localization.json", "_retrieval.json"):
        assert f"<code>GxTasks{name}</code>" in page
        served = client.get(reverse("release-file", args=[release.pk, f"GxTasks{name}"]))
        data = b"".join(served.streaming_content)
        assert hashlib.md5(data).hexdigest() == release.manifest["files"][f"GxTasks{name}"]["md5"]
    assert "By kind of item" in page
    # Kinds are named in words, and each file says what it holds.
    assert "Localization" in page and ">box<" not in page
    assert "open answers and reports, VLMEvalKit&#x27;s open-VQA layout" in page
    assert "target boxes: COCO 2D boxes, 3D boxes in voxels and LPS mm" in page
    assert "report–case pairs for retrieval in both directions" in page


def test_an_imported_gastricx_case_is_released_per_task(tmp_path, settings, people):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    write_case(tmp_path / "cases", "GX-IMP", phases=SMALL_GEOMETRY)
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx-imp", user=people["curator"])
    Item.objects.filter(benchmark=benchmark).update(status="agreed")

    manifest = release_export(benchmark=benchmark, out_dir=tmp_path / "r").manifest

    folder = tmp_path / "r"
    frame = pd.read_csv(folder / "gx-imp.tsv", sep="\t").set_index("index")
    t_item = Item.objects.get(benchmark=benchmark, kind="label", target__field="t")
    row = frame.loc[t_item.source_index]
    assert [row[c] for c in string.ascii_uppercase[:11]] == benchmark.label_sets["t"]
    assert row[row["answer"]] == "T3"  # the case is T3N1M0
    assert len(frame) == 2 + 4  # two VQA items, four classification items
    reports = pd.read_csv(folder / "gx-imp_report.tsv", sep="\t").set_index("index")
    ct_report = Item.objects.get(benchmark=benchmark, kind="open", target__report="ct")
    expected = [
        render_slice_png(volume_voxels(volume), volume.size_z // 2, *CT_WINDOW)
        for phase in ("arterial", "venous", "delayed")  # the phases in their clinical order
        for volume in Volume.objects.filter(case__benchmark=benchmark, phase=phase)
    ]
    assert images_of(reports.loc[ct_report.source_index, "image"]) == expected
    assert len(expected) == 3
    localization = json.loads((folder / "gx-imp_localization.json").read_text())
    venous = Volume.objects.get(case__benchmark=benchmark, phase="venous")
    (box,) = localization["boxes_3d"]
    assert box["voxel"] == [10, 12, 2, 30, 40, 6]
    sx, sy, sz = venous.spacing  # identity direction: origin + index × spacing
    ox, oy, oz = venous.origin
    assert box["mm"][0] == pytest.approx([ox + 10 * sx, oy + 12 * sy, oz + 2 * sz])
    assert box["mm"][1] == pytest.approx([ox + 29 * sx, oy + 39 * sy, oz + 5 * sz])
    assert manifest["layout"]["retrieval"]["pairs"] == 3
