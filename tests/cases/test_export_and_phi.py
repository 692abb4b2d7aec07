"""Box export blocks, COCO, localization scores, and de-identification everywhere."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Box, Item
from annotations.services import boxes as box_services
from annotations.services.box_export import (
    case_boxes_for_export,
    case_truth_boxes,
    coco_for_benchmark,
    localization_scores,
)
from annotations.services.errors import DomainError
from annotations.services.releases.export import release_export
from tests.cases.builders import PHI_STRINGS
from tests.cases.conftest import media_files
from tests.factories import PASSWORD


def test_release_boxes_carry_voxel_mm_and_geometry_per_phase(small_case, people):
    item = Item.objects.filter(case=small_case).first()
    blocks = case_boxes_for_export(item)
    assert [b["phase"] for b in blocks] == ["arterial", "venous", "delayed"]
    venous = blocks[1]
    assert venous["shape_zyx"] == [7, 40, 32]
    assert venous["origin"] == pytest.approx([-251.6, 181.4, -890.0])
    assert venous["boxes"][0]["voxel"] == [10, 12, 2, 30, 40, 6]
    assert venous["boxes"][0]["mm"][0] == pytest.approx([-243.6, 189.8, -880.0])
    json.dumps(blocks)  # plain JSON values only
    box = Box.objects.get(volume__case=small_case)
    box_services.box_review(box=box, version=1, state="rejected", user=people["curator"])
    assert case_boxes_for_export(small_case)[1]["boxes"] == []
    assert case_boxes_for_export(Item(question="no case")) == []


def test_a_release_refuses_ct_geometry_whose_millimetres_are_not_finite(small_case, tmp_path):
    # 1e308 mm voxels are a finite number that JSON and PostgreSQL hold; the box's corners in mm
    # are not (infinity), and NAME.json must not carry them as null.
    volume = Box.objects.get(volume__case=small_case).volume
    volume.spacing = [1e308, 1e308, 1e308]
    volume.save(update_fields=["spacing"])
    with pytest.raises(DomainError, match="GX-S-0001"):
        release_export(
            benchmark=small_case.benchmark, out_dir=tmp_path / "out" / "rel", include_all=True
        )
    assert list((tmp_path / "out").iterdir()) == []  # nothing published, no temporary folder


def test_coco_holds_the_2d_boxes_of_the_benchmark(small_case, people):
    image = small_case.endoscopy_image
    box_services.box_create_2d(
        image=image, label="lesion", coords=[10, 5, 60, 40], user=people["curator"]
    )
    out = io.StringIO()
    coco_for_benchmark(small_case.benchmark, out)
    data = json.loads(out.getvalue())
    assert data["images"] == [
        {"id": image.pk, "file_name": f"{image.sha256}.jpg", "width": 96, "height": 80}
    ]
    [annotation] = data["annotations"]
    assert annotation["bbox"] == [10, 5, 50, 35]
    assert data["categories"][annotation["category_id"] - 1]["name"] == "lesion"


def test_localization_scores_give_iou_per_box_and_ap_at_half(small_case):
    truths = case_truth_boxes(small_case)
    assert truths == [
        {"key": "GX-S-0001/venous", "label": "tumor", "voxel": [10, 12, 2, 30, 40, 6]}
    ]
    exact = {"key": "GX-S-0001/venous", "label": "tumor", "voxel": [10, 12, 2, 30, 40, 6]}
    half = {**exact, "voxel": [10, 12, 2, 20, 40, 6], "score": 0.9}
    assert localization_scores([exact], truths)["ap50_per_label"]["tumor"] == 1.0
    scores = localization_scores([half], truths)
    assert scores["iou_per_box"][0]["iou"] == pytest.approx(0.5)
    assert scores["map50"] == 1.0  # IoU 0.5 counts at the 0.5 threshold
    miss = localization_scores([{**exact, "key": "other/venous"}], truths)
    assert miss["mean_iou"] == 0.0 and miss["map50"] == 0.0
    assert math.isnan(localization_scores([], [])["ap50_per_label"].get("x", math.nan))


def test_no_planted_phi_in_stored_files_pages_api_or_exports(client, imported, people):
    stored = media_files()
    assert any(p.suffix == ".dcm" for p in stored)
    for path in stored:
        data = path.read_bytes()
        for marker in PHI_STRINGS:
            assert marker.encode() not in data, (marker, path)
    assert all(Path(settings.MEDIA_ROOT) in p.parents for p in stored)

    client.login(username=people["reviewer"].username, password=PASSWORD)
    api = APIClient()
    api.login(username=people["reviewer"].username, password=PASSWORD)
    volume = imported.volumes.get(phase="venous")
    item = Item.objects.filter(case=imported).first()
    answers = [
        client.get(reverse("cases")).content,
        client.get(reverse("case", args=[imported.pk])).content,
        client.get(reverse("item", args=[item.pk])).content,
        client.get(reverse("benchmark", args=[imported.benchmark.name])).content,
        api.get(reverse("api-case", args=[imported.pk])).content,
        api.get(reverse("api-volume", args=[volume.pk])).content,
        api.get(reverse("api-volume-boxes", args=[volume.pk])).content,
        json.dumps(case_boxes_for_export(imported)).encode(),
    ]
    coco = io.StringIO()
    coco_for_benchmark(imported.benchmark, coco)
    answers.append(coco.getvalue().encode())
    for answer in answers:
        for marker in PHI_STRINGS:
            assert marker.encode() not in answer
