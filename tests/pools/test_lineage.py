"""A drawn item keeps its lineage to the pool item: on its page and in the release."""

from __future__ import annotations

import csv
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotations.models import Item, ItemStatus
from annotations.services.releases import release_export
from tests.factories import make_user
from tests.pools.world import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def drawn():
    make_pool(images_per_stratum=3, questions_per_image=2)
    call_command("draw_benchmark", "endo-pool", "drawn", "--per", "task=4", "--seed", "11")
    return Item.objects.filter(benchmark__name="drawn").select_related("pool_item")


def test_the_item_page_links_to_the_pool_item(client, drawn):
    client.force_login(make_user("cur", "curator"))
    item = drawn.first()
    page = client.get(reverse("item", args=[item.pk])).content.decode()
    link = reverse("item", args=[item.pool_item.pk])
    assert f'<a href="{link}">endo-pool · #{item.pool_item.source_index}</a>' in page


def test_the_release_carries_the_pool_index_in_the_tsv_and_the_json(tmp_path, drawn):
    Item.objects.filter(benchmark__name="drawn").update(status=ItemStatus.AGREED)
    benchmark = drawn.first().benchmark
    release_export(benchmark=benchmark, out_dir=tmp_path / "out")
    expected = {item.source_index: str(item.pool_item.source_index) for item in drawn}
    with open(tmp_path / "out" / "drawn.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert {int(row["index"]): row["pool_index"] for row in rows} == expected
    released = json.loads((tmp_path / "out" / "drawn.json").read_text(encoding="utf-8"))
    assert {item["index"]: item["extra"]["pool_index"] for item in released["items"]} == expected
