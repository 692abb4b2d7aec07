"""Shared set-ups of the access tests: the role combinations of issue 17 and a client that asks
the same URL as a page, as an htmx partial and through the API."""

from __future__ import annotations

from django.test import TestCase
from rest_framework.test import APIClient

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER
from annotations.models import Item, Run, RunStatus
from annotations.services.human_baseline import human_baseline_open
from annotations.services.review import assignments_create, review_submit
from tests.factories import make_benchmark, make_item, make_personas, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
SECRET = "SECRET-COMMENT-OF-BOB"


def people_with_combinations() -> dict:
    """The shared personas, plus the combined roles the issue names:
    frank (reviewer + adjudicator), grace (curator + reviewer), and zoe, a plain reviewer who
    will only be given another benchmark."""
    people = make_personas()
    people["reviewer_adjudicator"] = make_user("frank", REVIEWER, ADJUDICATOR)
    people["curator_reviewer"] = make_user("grace", CURATOR, REVIEWER)
    people["elsewhere"] = make_user("zoe", REVIEWER)
    return people


def assigned(
    name: str,
    reviewers: list,
    *,
    items: int = 2,
    per_item: int = 2,
    family: str = "vlmeval",
    first_index: int = 1,
    **item_fields,
):
    """A benchmark of `items` items, each given to `per_item` of `reviewers` (balanced). Each
    item's image depends on its index: benchmarks with other indexes share no image."""
    benchmark = make_benchmark(name, family=family)
    made = [make_item(benchmark, index=first_index + i, **item_fields) for i in range(items)]
    assignments_create(benchmark=benchmark, reviewers=reviewers, per_item=per_item)
    return benchmark, [Item.objects.get(pk=item.pk) for item in made]


def review(item: Item, user, verdict: str = "accept", **fields) -> Item:
    item.refresh_from_db()
    review_submit(item=item, reviewer=user, version=item.version, verdict=verdict, **fields)
    return Item.objects.get(pk=item.pk)


def secret_reject(item: Item, user) -> Item:
    """`user` rejects the item with the comment the blinded must never read."""
    return review(item, user, "reject", reason="ambiguous", comment=SECRET)


def open_baseline(benchmark, clinician, curator) -> Run:
    return human_baseline_open(benchmark=benchmark, clinician=clinician, opened_by=curator)


def end_baseline(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)


class AccessTestCase(TestCase):
    """`page`, `htmx` and `api` ask a URL as one persona; `api` uses token-less DRF auth."""

    people: dict

    def page(self, who: str, url: str, **extra):
        self.client.force_login(self.people[who])
        return self.client.get(url, **extra)

    def htmx(self, who: str, url: str, **extra):
        return self.page(who, url, **HTMX, **extra)

    def api(self, who: str, url: str, method: str = "get", body=None):
        client = APIClient()
        client.force_authenticate(self.people[who])
        return getattr(client, method)(url, body, format="json")

    def assert_hidden(self, response, status: int, *secrets: str):
        """The answer has `status` and none of `secrets` anywhere in its body."""
        self.assertEqual(response.status_code, status, getattr(response, "url", ""))
        body = response.content.decode()
        for secret in secrets:
            self.assertNotIn(secret, body)
