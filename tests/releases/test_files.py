"""The files of a release: VLMEvalKit-readable, reproducible, checksummed, exact."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.db import DataError, IntegrityError, transaction
from PIL import Image as PILImage

from annotations.models import Item
from annotations.selectors.release_rows import shared_image_ids
from annotations.services.errors import DomainError
from annotations.services.releases import ExportOptions, release_export
from annotations.services.releases.selection import release_items
from tests.factories import make_personas
from tests.releases.helpers import (
    ENDO_COLUMNS,
    decodes,
    edit,
    endo_benchmark,
    read_tsv,
    resolved_images,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return make_personas()


@pytest.fixture
def benchmark(people):
    return endo_benchmark(people)


def export(benchmark, folder, **options):
    return release_export(
        benchmark=benchmark,
        out_dir=folder,
        name="EndoRelease",
        options=ExportOptions.release(version="1.0", **options),
    )


def test_the_tsv_reads_as_vlmevalkit_reads_it_and_every_image_decodes(benchmark, tmp_path):
    export(benchmark, tmp_path / "r")
    frame = read_tsv(tmp_path / "r" / "EndoRelease.tsv")

    assert list(frame["index"]) == [1, 2, 3, 4]  # disputed (5) and rejected (6) left out
    assert frame.loc[1, "image"] == "1"  # the shared frame is written once, then reused by index
    images = resolved_images(frame)
    assert images[1] == images[2]
    assert len(images[3]) == 2  # two images of one item: a list cell
    assert all(decodes(data) for datas in images.values() for data in datas)
    original = Item.objects.get(benchmark=benchmark, source_index=1).item_images.get().image
    assert images[1][0] == original.file.open("rb").read()  # JPEG passed through untouched
    with PILImage.open(__import__("io").BytesIO(images[3][1])) as converted:
        assert converted.format == "PNG"  # a GIF is encoded (once) as PNG
    assert list(frame["A"]) == ["Polyp"] * 4
    assert frame["E"].isna().all() if "E" in frame else True


def test_category_and_l2_category_follow_the_family_so_vlmevalkit_reports_by_them(
    benchmark, tmp_path
):
    result = export(benchmark, tmp_path / "r")
    frame = read_tsv(tmp_path / "r" / "EndoRelease.tsv")

    # EndoBench: category stays its category, l2-category is the finer task.
    assert list(frame["category"]) == ["Lesion", "Anatomy", "Lesion", "Lesion"]
    assert list(frame["l2-category"])[-1] == "Polyp sizing"
    assert {"split", "task", "category", "l2-category"} <= set(frame.columns)
    assert result.manifest["report_columns"] == {"category": "category", "l2-category": "task"}
    assert result.manifest["counts"]["split"] == {"dev": 2, "test": 2}
    assert result.manifest["counts"]["l2-category"] == {
        "Landmark identification": 3,
        "Polyp sizing": 1,
    }


def test_the_manifest_digests_match_the_files_and_a_rebuild_is_byte_identical(benchmark, tmp_path):
    first = export(benchmark, tmp_path / "one")
    export(benchmark, tmp_path / "two")

    one = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*"))
    two = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*"))
    assert one == two
    for relative in one:
        if (tmp_path / "one" / relative).is_file():
            assert (tmp_path / "one" / relative).read_bytes() == (
                tmp_path / "two" / relative
            ).read_bytes(), relative
    for name, digest in first.manifest["files"].items():
        data = (tmp_path / "one" / name).read_bytes()
        assert digest == {
            "bytes": len(data),
            "md5": hashlib.md5(data).hexdigest(),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["schema_version"] == 2 and "box_convention" in manifest
    assert manifest["version"] == "1.0" and manifest["items"] == 4


def test_the_local_layout_points_at_image_files_named_by_their_hash(benchmark, tmp_path):
    export(benchmark, tmp_path / "r", local_layout=True)
    local = read_tsv(tmp_path / "r" / "EndoRelease_local.tsv")

    assert "image" not in local.columns
    images_dir = tmp_path / "r" / "images"
    paths = dict(zip(local["index"], local["image_path"], strict=True))
    assert paths[1] == paths[2]  # one file per image
    for index in (1, 2, 4):
        data = (images_dir / paths[index]).read_bytes()
        assert paths[index].split(".")[0] == hashlib.sha256(data).hexdigest() and decodes(data)
    assert paths[3].startswith("[") and paths[3].count(".") == 2
    assert len(list(images_dir.iterdir())) == 4


def test_withheld_answers_are_absent_from_the_test_file_and_kept_in_a_separate_key(
    benchmark, tmp_path
):
    result = export(benchmark, tmp_path / "r", withhold_split="test")
    folder = tmp_path / "r"
    test = read_tsv(folder / "EndoRelease_test.tsv")
    main = read_tsv(folder / "EndoRelease.tsv")

    assert list(test["index"]) == [3, 4] and list(main["index"]) == [1, 2]
    assert "answer" not in test.columns and "gt" not in test.columns
    assert len(resolved_images(test)[3]) == 2  # the test file resolves its own images
    key = json.loads((folder / "EndoRelease_test_answers.json").read_text())
    assert [(a["index"], a["answer"]) for a in key["answers"]] == [(3, "A"), (4, "C")]
    items = json.loads((folder / "EndoRelease.json").read_text())["items"]
    withheld = [i for i in items if i.get("withheld")]
    assert [i["answer"] for i in withheld] == [None, None]
    assert result.manifest["layout"]["test"]["rows"] == 2


def test_the_json_carries_provenance_without_reviewer_identities(benchmark, people, tmp_path):
    edit(Item.objects.get(benchmark=benchmark, source_index=2), question="Which organ is it?")
    export(benchmark, tmp_path / "r")
    text = (tmp_path / "r" / "EndoRelease.json").read_text()
    items = {i["index"]: i for i in json.loads(text)["items"]}

    assert items[1]["reviews"] == {
        "count": 2,
        "verdicts": {"accept": 1, "reject": 1},
        "reject_reasons": {"ambiguous": 1},
    }
    assert items[1]["adjudication"]["choice"] == "a"
    assert [b["label"] for b in items[1]["boxes"]] == ["polyp"]  # the rejected box is left out
    assert [r["reason"] for r in items[2]["revisions"]] == ["imported", "edited"]
    assert items[2]["revision"] == 2 and items[2]["question"] == "Which organ is it?"
    for person in people.values():
        assert person.username not in text


def test_the_coco_file_holds_the_2d_boxes_of_released_images(benchmark, tmp_path):
    export(benchmark, tmp_path / "r", local_layout=True)
    coco = json.loads((tmp_path / "r" / "EndoRelease_coco.json").read_text())

    assert [a["bbox"] for a in coco["annotations"]] == [[2, 3, 10, 10]]
    image = coco["images"][0]
    assert (tmp_path / "r" / "images" / image["file_name"]).exists()


def test_the_local_layout_is_written_only_for_a_release_over_the_part_threshold(
    benchmark, tmp_path
):
    export(benchmark, tmp_path / "small")
    assert not (tmp_path / "small" / "EndoRelease_local.tsv").exists()
    assert not (tmp_path / "small" / "images").exists()
    export(benchmark, tmp_path / "large", part_bytes=10)
    assert (tmp_path / "large" / "EndoRelease_local.tsv").exists()
    assert len(list((tmp_path / "large" / "images").iterdir())) == 4


def test_a_large_release_is_also_split_into_self_contained_parts(benchmark, tmp_path):
    result = export(benchmark, tmp_path / "r", part_bytes=10)
    parts = [p["tsv"] for p in result.manifest["layout"]["parts"]]

    assert len(parts) == 4  # every row crosses the tiny threshold
    rows = []
    for part in parts:
        frame = read_tsv(tmp_path / "r" / part)
        images = resolved_images(frame)  # no reference points outside its own part
        rows += list(frame["index"])
        assert all(decodes(data) for datas in images.values() for data in datas)
    assert rows == [1, 2, 3, 4]


def test_parts_hold_the_same_rows_as_the_whole_tsv_with_images_repeated_across_parts(tmp_path):
    """Most part rows are NAME.tsv's rows byte for byte (the worker copies them); a row whose
    image was first shown in an earlier part holds the image itself, so each part stands alone."""
    from tests.factories import jpeg_bytes, make_benchmark, make_item

    benchmark = make_benchmark("parts", family="endobench", columns=ENDO_COLUMNS)
    frames = [jpeg_bytes(color=(20 * n, 90, 60), size=(48, 40)) for n in range(8)]
    for index in range(1, 17):  # neighbours share a frame; the last item shows the first one's
        frame = frames[0] if index == 16 else frames[(index - 1) // 2]
        make_item(benchmark, index=index, image=frame, status="agreed")
    result = export(benchmark, tmp_path / "r", part_bytes=3000)

    folder = tmp_path / "r"
    main_lines = (folder / "EndoRelease.tsv").read_text().splitlines()
    by_index = {line.split("\t", 1)[0]: line for line in main_lines[1:]}
    main_images = resolved_images(read_tsv(folder / "EndoRelease.tsv"))
    parts = result.manifest["layout"]["parts"]
    assert len(parts) >= 3
    same = changed = 0
    indexes = []
    for part in parts:
        path = folder / part["tsv"]
        assert (
            hashlib.md5(path.read_bytes()).hexdigest()
            == result.manifest["files"][part["tsv"]]["md5"]
        )
        lines = path.read_text().splitlines()
        assert lines[0] == main_lines[0]
        for line in lines[1:]:
            index = line.split("\t", 1)[0]
            indexes.append(int(index.strip('"')))
            if line == by_index[index]:
                same += 1
            else:  # NAME.tsv points at a row of an earlier part: here the image is written
                changed += 1
                assert len(line) > len(by_index[index])
        images = resolved_images(read_tsv(path))
        assert images == {index: main_images[index] for index in images}
    assert indexes == list(range(1, 17))
    assert same > 0 and changed > 0


def test_filters_keep_only_the_chosen_split_and_category(benchmark, tmp_path):
    result = release_export(
        benchmark=benchmark,
        out_dir=tmp_path / "r",
        filters={"split": ["dev"], "category": ["Anatomy"]},
        options=ExportOptions.release(),
    )
    assert result.item_count == 1
    assert result.manifest["selection"]["filters"] == {"category": ["Anatomy"], "split": ["dev"]}
    with pytest.raises(DomainError, match="filtered on"):
        release_export(benchmark=benchmark, out_dir=tmp_path / "x", filters={"status": ["x"]})


@pytest.mark.parametrize("name", ["MyMMBench", "ccbench_v2", "Circular-endo", "mmcr1"])
def test_names_vlmevalkit_would_score_circularly_are_refused(benchmark, tmp_path, name):
    with pytest.raises(DomainError, match="circularly"):
        release_export(benchmark=benchmark, out_dir=tmp_path / "r", name=name)
    assert not (tmp_path / "r").exists()


def test_a_medqdeg_release_reports_by_modality_and_degradation_with_pair_keys(tmp_path):
    from tests.factories import make_benchmark, make_item

    benchmark = make_benchmark(
        "medq", family="medqdeg", columns=["index", "image", "question", "A", "B", "answer"]
    )
    clean = make_item(
        benchmark, index=1, modality="CT", degradation_severity="clean", status="agreed"
    )
    make_item(
        benchmark,
        index=2,
        modality="CT",
        clean_twin=clean,
        degradation_type="low_dose",
        degradation_severity="severe",
        degradation_params={"dose": 0.2},
        degradation_seed=7,
        status="agreed",
    )
    export(benchmark, tmp_path / "r")
    frame = read_tsv(tmp_path / "r" / "EndoRelease.tsv")
    items = json.loads((tmp_path / "r" / "EndoRelease.json").read_text())["items"]

    assert list(frame["category"]) == ["CT", "CT"]
    assert list(frame["l2-category"]) == ["clean", "low_dose"]
    assert list(frame["clean_index"]) == [1, 1]
    assert list(frame["pair_id"]) == ["medq:1", "medq:1"]
    assert items[1]["degradation"]["params"] == {"dose": 0.2}
    assert items[1]["degradation"]["seed"] == 7


def test_no_item_can_hold_nan_in_its_json_so_no_release_writes_it_as_null(benchmark):
    # NAME.json's encoder writes NaN as null; the JSON columns it reads can never hold one:
    # SQLite's JSON_VALID check and PostgreSQL's jsonb both refuse Python's NaN token.
    item = Item.objects.get(benchmark=benchmark, source_index=1)
    for field in ("extra", "degradation_params"):
        setattr(item, field, {"score": float("nan")})
        with pytest.raises((IntegrityError, DataError)), transaction.atomic():
            item.save(update_fields=[field])


def test_an_item_without_an_answer_gets_no_answer_text(benchmark, tmp_path):
    # Before the fix, str.find('') == 0 named option A as the answer of an unanswered item.
    Item.objects.filter(benchmark=benchmark, source_index=2).update(answer="")
    folder = export(benchmark, tmp_path / "r").folder
    frame = read_tsv(folder / "EndoRelease.tsv").set_index("index")
    assert frame["gt"].isna()[2] and frame["answer"].isna()[2]  # empty cells
    assert frame.loc[1, "gt"] == Item.objects.get(benchmark=benchmark, source_index=1).answer_text
    items = {i["index"]: i for i in json.loads((folder / "EndoRelease.json").read_text())["items"]}
    assert items[2]["answer"] == "" and items[2]["answer_text"] == ""
    assert items[1]["answer_text"] == frame.loc[1, "gt"] != ""


def test_only_images_several_items_show_are_remembered_for_reuse(benchmark):
    frame = Item.objects.get(benchmark=benchmark, source_index=1).item_images.get().image_id
    assert Item.objects.get(benchmark=benchmark, source_index=2).item_images.get().image_id == frame
    curated = release_items(benchmark, include_all=False)
    assert shared_image_ids(curated) == {frame}
    # Item 3's two images are shown by item 3 only; a list cell is remembered by its tuple.
    assert shared_image_ids(curated.filter(source_index__gte=3)) == set()
