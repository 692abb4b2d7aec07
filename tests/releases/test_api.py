"""The release API: list, create, detail; curators only; in the OpenAPI schema."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Release, ReleaseStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


def test_release_endpoints_need_a_login_and_the_curator_role(api, people, published):
    endpoints = [
        ("get", reverse("api-releases")),
        ("post", reverse("api-release-create")),
        ("get", reverse("api-release", args=[published.pk])),
    ]
    for method, url in endpoints:
        assert getattr(api, method)(url).status_code == 401, url
        for role in ("outsider", "reviewer", "adjudicator"):
            api.force_authenticate(people[role])
            assert getattr(api, method)(url).status_code == 403, (url, role)
            api.force_authenticate(None)


def test_release_endpoints_refuse_the_wrong_method(api, people, published):
    api.force_authenticate(people["curator"])
    assert api.post(reverse("api-releases")).status_code == 405
    assert api.get(reverse("api-release-create")).status_code == 405
    assert api.delete(reverse("api-release", args=[published.pk])).status_code == 405


def test_the_list_and_detail_show_the_release_and_its_manifest(
    api, people, published, django_assert_num_queries
):
    api.force_authenticate(people["curator"])
    with django_assert_num_queries(4):
        listed = api.get(reverse("api-releases"), {"benchmark": "endo"}).json()
    assert listed["count"] == 1
    assert listed["results"][0]["name"] == "EndoRelease"
    assert listed["results"][0]["created_by"] == people["curator"].username

    detail = api.get(reverse("api-release", args=[published.pk])).json()
    assert detail["status"] == "published" and detail["item_count"] == 4
    assert detail["manifest"]["files"]["EndoRelease.tsv"]["md5"]
    assert api.get(reverse("api-release", args=[999])).status_code == 404


def test_a_curator_creates_a_release_that_a_worker_builds(api, people, benchmark, queued):
    api.force_authenticate(people["curator"])
    response = api.post(
        reverse("api-release-create"),
        {
            "benchmark": "endo",
            "name": "EndoDev",
            "version": "1.0",
            "filters": {"split": ["dev"]},
            "withhold_split": "",
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    release = Release.objects.get(name="EndoDev")
    assert response.json()["id"] == release.pk and release.status == ReleaseStatus.QUEUED
    assert release.filters == {"split": ["dev"]} and release.item_count == 2


def test_bad_release_requests_get_a_clear_400(api, people, benchmark, published, queued):
    api.force_authenticate(people["curator"])
    create = reverse("api-release-create")
    cases = [
        ({"benchmark": "endo", "version": "1", "filters": {"status": ["x"]}}, "unknown filter"),
        ({"benchmark": "endo", "name": "x-circular", "version": "1"}, "circularly"),
        ({"benchmark": "endo", "name": "EndoRelease", "version": "1.0"}, "already exists"),
        ({"benchmark": "nope", "version": "1"}, "does not exist"),
    ]
    for body, message in cases:
        response = api.post(create, body, format="json")
        assert response.status_code == 400 and message in response.content.decode(), body
    assert Release.objects.count() == 1 and queued == []


def test_the_release_endpoints_are_in_the_openapi_schema(api, people):
    api.force_authenticate(people["curator"])
    schema = api.get(reverse("api-schema"), {"format": "json"}).json()
    assert {"/api/releases/", "/api/releases/create/", "/api/releases/{id}/"} <= set(
        schema["paths"]
    )
