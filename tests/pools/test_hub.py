"""A pool's hub: the draw form submitted as rendered, the strata table, top-up by its button."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Benchmark, Item, ItemStatus
from tests.factories import make_user
from tests.pools.pageform import as_post, rendered_form
from tests.pools.world import make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(client):
    user = make_user("cur", "curator")
    client.force_login(user)
    return user


def test_a_draw_from_the_pool_hub_makes_the_benchmark_and_shows_its_strata(client, curator):
    make_pool(images_per_stratum=4, questions_per_image=2)
    hub = client.get(reverse("benchmark", args=["endo-pool"]))
    action, fields = rendered_form(hub.content.decode(), "data-draw-form")
    data = as_post(
        fields,
        {
            "draw-name": "drawn",
            "draw-seed": "3",
            "draw-fields": ["scene", "task"],
            "draw-per_stratum": "5",
        },
    )
    response = client.post(action, data)
    assert response.status_code == 302 and response["Location"].endswith("/benchmarks/drawn/")
    drawn = Benchmark.objects.get(name="drawn")
    assert drawn.draw.balance_answers and drawn.draw.exclude_near_duplicates  # as rendered
    assert Item.objects.filter(benchmark=drawn).count() == 30
    page = client.get(response["Location"]).content.decode()
    assert 'data-stratum="colonoscopy / landmark"' in page
    assert "Drawn from the pool endo-pool (seed 3)" in page


def test_a_refused_draw_keeps_what_was_typed_and_says_why(client, curator):
    make_pool(images_per_stratum=2, questions_per_image=1)
    Benchmark.objects.create(name="taken", family="endobench")
    hub = client.get(reverse("benchmark", args=["endo-pool"]))
    action, fields = rendered_form(hub.content.decode(), "data-draw-form")
    data = as_post(
        fields,
        {"draw-name": "taken", "draw-seed": "9", "draw-fields": ["task"], "draw-per_stratum": "1"},
    )
    response = client.post(action, data)
    assert response.status_code == 400
    page = response.content.decode()
    assert "already exists" in page and 'value="9"' in page


def test_top_up_from_the_hub_button_restores_the_quota(client, curator):
    make_pool(images_per_stratum=6, questions_per_image=2)
    from django.core.management import call_command

    call_command("draw_benchmark", "endo-pool", "drawn", "--per", "task=4", "--seed", "1")
    rejected = Item.objects.filter(benchmark__name="drawn", task="lesion")[:3]
    Item.objects.filter(pk__in=[item.pk for item in rejected]).update(status=ItemStatus.REJECTED)
    hub = client.get(reverse("benchmark", args=["drawn"])).content.decode()
    assert "Draw 3 replacements" in hub
    action, fields = rendered_form(hub, "data-top-up-form")
    client.post(action, as_post(fields, {}))
    standing = Item.objects.filter(benchmark__name="drawn").exclude(status=ItemStatus.REJECTED)
    assert standing.filter(task="lesion").count() == 4
    assert (
        "Draw 3 replacements"
        not in client.get(reverse("benchmark", args=["drawn"])).content.decode()
    )


def test_a_pool_lists_its_items_by_key_without_counting_them(
    client, curator, django_assert_max_num_queries
):
    pool = make_pool(images_per_stratum=10, questions_per_image=6)  # 360 candidates
    url = reverse("benchmark", args=["endo-pool"])
    first = client.get(url)
    assert "360 candidates in the pool" in first.content.decode()
    page = first.context["page"]
    assert len(page.object_list) == 50 and page.next_after is not None
    second = client.get(f"{url}?after={page.next_after}")
    indexes = [item.source_index for item in second.context["page"]]
    assert indexes[0] > page.next_after and len(indexes) == 50
    assert pool.item_count == 360


def test_a_quota_file_chosen_on_the_hub_form_sets_each_stratum(client, curator):
    from django.core.files.uploadedfile import SimpleUploadedFile

    make_pool(images_per_stratum=4, questions_per_image=2)
    hub = client.get(reverse("benchmark", args=["endo-pool"]))
    action, fields = rendered_form(hub.content.decode(), "data-draw-form")
    quotas = SimpleUploadedFile("quotas.csv", b"scene,quota\ncolonoscopy,9\ngastroscopy,2\n")
    data = as_post(fields, {"draw-name": "by-file", "draw-seed": "4", "draw-quota_file": quotas})
    response = client.post(action, data)
    assert response.status_code == 302, response.context["draw_form"].errors
    scenes = Item.objects.filter(benchmark__name="by-file").values_list("scene", flat=True)
    assert sorted(scenes) == ["colonoscopy"] * 9 + ["gastroscopy"] * 2


def test_a_curator_marks_a_benchmark_as_a_pool_from_its_hub(client, curator):
    from tests.factories import make_benchmark, make_item

    benchmark = make_benchmark("candidates")
    make_item(benchmark)
    make_item(benchmark)
    hub = client.get(reverse("benchmark", args=["candidates"])).content.decode()
    action, fields = rendered_form(hub, "data-mark-pool-form")
    client.post(action, as_post(fields, {}))
    benchmark.refresh_from_db()
    assert benchmark.is_pool and benchmark.item_count == 2
    page = client.get(reverse("benchmark", args=["candidates"])).content.decode()
    assert "A pool of 2 candidates" in page and "data-mark-pool-form" not in page
