from __future__ import annotations

import pytest

from annotations.models import Item
from annotations.services.degrade import benchmark_degrade
from annotations.services.pair_export import PAIR_TSV_COLUMNS, pair_json_fields, pair_tsv_fields
from tests.factories import make_benchmark, make_item
from tests.pairs.helpers import make_pair_benchmark

pytestmark = pytest.mark.django_db


def test_a_twin_points_at_its_clean_item_and_keeps_params_and_seed():
    benchmark = make_pair_benchmark()
    benchmark_degrade(benchmark=benchmark, kinds="motion_blur", severities="severe", seed=2)
    twin = Item.objects.select_related("clean_twin", "benchmark").get(clean_twin__source_index=1)
    tsv = pair_tsv_fields(twin)
    assert list(tsv) == list(PAIR_TSV_COLUMNS)
    assert tsv == {
        "modality": "Dermoscopy",
        "degradation_type": "motion_blur",
        "degradation_severity": "severe",
        "source": "ISIC",
        "clean_index": 1,
        "pair_id": "medq:1",
    }
    extra = pair_json_fields(twin)
    assert extra["clean_index"] == 1 and extra["pair_id"] == "medq:1"
    assert extra["degradation_seed"] == twin.degradation_seed
    assert extra["degradation_params"]["kind"] == "motion_blur"


def test_the_clean_item_is_its_own_pair_key_and_other_items_have_none():
    benchmark = make_pair_benchmark()
    clean = benchmark.items.get(source_index=0)
    assert pair_tsv_fields(clean)["clean_index"] == 0
    assert pair_tsv_fields(clean)["pair_id"] == "medq:0"
    plain = make_item(make_benchmark())
    assert pair_tsv_fields(plain)["clean_index"] == "" and pair_tsv_fields(plain)["pair_id"] == ""
    assert pair_json_fields(plain) == {
        "clean_index": None,
        "pair_id": None,
        "degradation_params": None,
        "degradation_seed": None,
    }
