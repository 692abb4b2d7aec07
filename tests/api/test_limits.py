"""List APIs bound `limit` and `offset` (issue 29): past a bigint is a page, never a 500."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.api.pagination import MAX_LIMIT
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = pytest.mark.django_db
HUGE = str(2**70)


@pytest.fixture
def curator_api():
    people = make_personas()
    api = APIClient()
    api.force_authenticate(people["curator"])
    benchmark = make_benchmark("lim", family="gastricx")
    for index in range(3):
        make_item(benchmark, index=index + 1)
    return api


@pytest.mark.parametrize(
    "url",
    [
        reverse("api-benchmark-items", args=["lim"]),
        reverse("api-benchmark-cases", args=["lim"]),
        reverse("api-runs"),
        reverse("api-releases"),
    ],
)
def test_a_limit_or_offset_past_a_bigint_is_a_page(curator_api, url):
    huge_limit = curator_api.get(url, {"limit": HUGE})
    assert huge_limit.status_code == 200, huge_limit.content
    assert huge_limit.json()["results"] is not None
    huge_offset = curator_api.get(url, {"limit": "10", "offset": HUGE})
    assert huge_offset.status_code == 200 and huge_offset.json()["results"] == []


def test_a_page_holds_at_most_the_bound():
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from annotations.api.pagination import BoundedLimitOffsetPagination

    request = Request(APIRequestFactory().get("/", {"limit": str(MAX_LIMIT * 10)}))
    assert BoundedLimitOffsetPagination().get_limit(request) == MAX_LIMIT
