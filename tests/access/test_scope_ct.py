"""Data scope of Gastric-X cases: another benchmark's case, CT volumes, slices, voxels, boxes and
endoscopy image do not exist for a reviewer (404), in pages and the API."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Box, Case
from annotations.selectors.cases import memmaps
from annotations.services import boxes as box_services
from annotations.services.cases import gastricx_import
from annotations.services.human_baseline import human_baseline_open
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
        reverse("volume-slice-voxels", args=[volume.pk, 3]),
        reverse("volume-chunk", args=[volume.pk, 0]),
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


def _box_ids(api, url) -> set[int]:
    response = api.get(url)
    assert response.status_code == 200, url
    return {box["id"] for box in response.json()}


def _page_box_ids(client, case) -> set[int]:
    response = client.get(reverse("case", args=[case.pk]))
    config = response.context["viewer_config"]
    ids = {box["id"] for volume in config["volumes"] for box in volume["boxes"]}
    image = response.context["image_config"]
    return ids | {box["id"] for box in (image or {}).get("boxes", [])}


def test_a_reviewer_of_the_case_sees_imported_boxes_and_her_own_not_the_other_reviewers(
    client, world
):
    people, case = world
    volume = case.volumes.get(phase="venous")
    imported = set(Box.objects.filter(volume__case=case).values_list("pk", flat=True))
    assert imported, "the case comes with its tumor boxes"
    mine = box_services.box_create_3d(
        volume=volume, label="tumor", voxel=VOXEL, user=people["reviewer"]
    )
    theirs = box_services.box_create_3d(
        volume=volume, label="tumor", voxel=VOXEL, user=people["reviewer2"]
    )
    volume_url = f"/api/volumes/{volume.pk}/boxes/"
    # Both reviewers still have their assignments open: each is blind to the other's boxes,
    # in the API, the case page and a direct read of the box.
    for me, other in (("reviewer", theirs), ("reviewer2", mine)):
        own = mine if me == "reviewer" else theirs
        seen = _box_ids(api_as(people[me]), volume_url)
        assert own.pk in seen and other.pk not in seen
        assert seen >= {pk for pk in imported if Box.objects.get(pk=pk).volume_id == volume.pk}
        client.force_login(people[me])
        assert other.pk not in _page_box_ids(client, case)
        assert own.pk in _page_box_ids(client, case)
        withdraw = f"/api/boxes/{other.pk}/?version={other.version}"
        assert api_as(people[me]).delete(withdraw).status_code == 404
        assert Box.objects.get(pk=other.pk).state != "withdrawn"
    # The curator reviews nothing here and sees every box.
    assert {mine.pk, theirs.pk} <= _box_ids(api_as(people["curator"]), volume_url)


def test_a_curator_who_reviews_the_case_is_blinded_like_any_reviewer(world):
    people, case = world
    grace = people["curator_reviewer"]
    # grace, a curator, takes over the second reviewer's open assignments on the case.
    Assignment.objects.filter(reviewer=people["reviewer2"], item__case=case).update(reviewer=grace)
    volume = case.volumes.get(phase="venous")
    drawn = box_services.box_create_3d(
        volume=volume, label="tumor", voxel=VOXEL, user=people["reviewer"]
    )
    assert grace.assignments.filter(item__case=case, completed_at__isnull=True).exists()
    assert drawn.pk not in _box_ids(api_as(grace), f"/api/volumes/{volume.pk}/boxes/")


def test_a_clinician_answering_a_baseline_sees_no_imported_box(world):
    people, case = world
    curator = people["curator"]
    session = human_baseline_open(
        benchmark=case.benchmark, clinician=people["adjudicator"], opened_by=curator
    )
    volume = case.volumes.get(phase="venous")
    assert _box_ids(api_as(people["adjudicator"]), f"/api/volumes/{volume.pk}/boxes/") == set()
    assert session.status == "running"
    assert _box_ids(api_as(curator), f"/api/volumes/{volume.pk}/boxes/")


def _listed_boxes(client, api, case) -> tuple[int, int]:
    """The case's box count in the case list page and in the API's case list."""
    page = client.get(reverse("benchmark-cases", args=[case.benchmark.name]))
    (row,) = [c for c in page.context["page"] if c.pk == case.pk]
    listed = api.get(reverse("api-benchmark-cases", args=[case.benchmark.name])).json()
    (api_row,) = [c for c in listed["results"] if c["id"] == case.pk]
    return row.n_boxes, api_row["boxes"]


def test_a_baseline_clinicians_case_list_counts_only_her_own_boxes(client, world):
    people, case = world
    curator, clinician = people["curator"], people["adjudicator"]
    volume = case.volumes.get(phase="venous")
    imported = Box.objects.filter(volume__case=case, source="imported").count()
    assert imported > 0
    client.force_login(curator)
    assert _listed_boxes(client, api_as(curator), case) == (imported, imported)

    human_baseline_open(benchmark=case.benchmark, clinician=clinician, opened_by=curator)
    # The number of reference boxes is the localization items' gold too.
    client.force_login(clinician)
    assert _listed_boxes(client, api_as(clinician), case) == (0, 0)
    box_services.box_create_3d(volume=volume, label="tumor", voxel=VOXEL, user=people["reviewer"])
    assert _listed_boxes(client, api_as(clinician), case) == (0, 0)
    client.force_login(curator)
    assert _listed_boxes(client, api_as(curator), case) == (imported + 1, imported + 1)
