"""/api/releases/ID/ does not show where the server keeps the files (issue 29)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.services.releases import release_create
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = pytest.mark.django_db


def test_a_release_answer_holds_no_server_path(tmp_path, settings):
    settings.RELEASES_ROOT = str(tmp_path / "releases")
    people = make_personas()
    benchmark = make_benchmark("rel")
    make_item(benchmark, index=1, status="agreed")
    release = release_create(benchmark=benchmark, name="Rel", version="1")
    api = APIClient()
    api.force_authenticate(people["curator"])
    for url in (reverse("api-release", args=[release.pk]), reverse("api-releases")):
        response = api.get(url)
        assert response.status_code == 200
        assert '"path"' not in response.content.decode()
        assert str(tmp_path) not in response.content.decode()
