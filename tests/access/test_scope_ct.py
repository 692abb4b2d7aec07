"""Data scope of Gastric-X cases: another benchmark's case, CT volumes, slices, voxels, boxes and
endoscopy image do not exist for a reviewer (404), in pages and the API."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Box, Case
from annotations.selectors.cases import memmaps
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.access.helpers import HTMX, assigned, people_with_combinations
from tests.cases.builders import SMALL_GEOMETRY, write_case


@pytest.fixture
def world(db, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    memmaps.clear()
    people = people_with_combinations()
    write_case(tmp_path / "cases", "GX-SCOPE-1", phases=SMALL_GEOMETRY)
    gastricx_import(path=tmp_path / "cases", name="gx-scope", user=people["curator"])
    case = Case.objects.get(case_id="GX-SCOPE-1")
    assignments_create(
        benchmark=case.benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    assigned("zoes", [people["elsewhere"]], items=1, per_item=1, first_index=50)
    yield people, case
    memmaps.clear()


JSON = {"format": "json"}
VOXEL = [1, 1, 1, 4, 4, 2]


def page_urls(case) -> list[str]:
    volume = case.volumes.get(phase="venous")
    return [
        reverse("case", args=[case.pk]),
        reverse("benchmark-cases", args=[case.benchmark.name]),
        reverse("volume-slice", args=[volume.pk, 3]),
        reverse("volume-voxels", args=[volume.pk]),
        reverse("image", args=[case.endoscopy_image.sha256]),
    ]


def api_reads(case) -> list[str]:
    volume = case.volumes.get(phase="venous")
    return [
        f"/api/cases/{case.pk}/",
        f"/api/volumes/{volume.pk}/",
        f"/api/volumes/{volume.pk}/boxes/",
        f"/api/images/{case.endoscopy_image.sha256}/boxes/",
    ]


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_reviewer_of_another_benchmark_finds_nothing_of_the_case(client, world):
    people, case = world
    client.force_login(people["elsewhere"])
    for url in page_urls(case):
        assert client.get(url).status_code == 404, url
        assert client.get(url, **HTMX).status_code == 404, url
    api = api_as(people["elsewhere"])
    for url in api_reads(case):
        assert api.get(url).status_code == 404, url
    listing = client.get(reverse("cases"))
    assert listing.status_code == 200 and "GX-SCOPE-1" not in listing.content.decode()


def test_nor_can_she_draw_on_it_or_touch_its_boxes(world):
    people, case = world
    volume = case.volumes.get(phase="venous")
    box = Box.objects.filter(volume__case=case).first()
    api = api_as(people["elsewhere"])
    attempts = [
        api.post(
            f"/api/volumes/{volume.pk}/boxes/", {"label": "tumor", "voxel": [1, 1, 1, 4, 4, 2]}
        ),
        api.patch(f"/api/boxes/{box.pk}/", {"version": box.version, "label": "tumor"}),
        api.post(f"/api/boxes/{box.pk}/review/", {"version": box.version, "state": "rejected"}),
        api.post(f"/api/boxes/{box.pk}/copy/", {"volume": volume.pk}),
    ]
    assert [response.status_code for response in attempts] == [404, 404, 404, 404]
    assert Box.objects.filter(volume__case=case).count() == 1
    assert Box.objects.get(pk=box.pk).version == box.version


def test_its_reviewers_and_the_curator_see_it_all(client, world):
    people, case = world
    for persona in ("reviewer", "curator"):
        client.force_login(people[persona])
        for url in page_urls(case):
            assert client.get(url).status_code == 200, (persona, url)
        api = api_as(people[persona])
        for url in api_reads(case):
            assert api.get(url).status_code == 200, (persona, url)
        assert "GX-SCOPE-1" in client.get(reverse("cases")).content.decode()
