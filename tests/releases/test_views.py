"""Release pages: who may see them, what they show, what they change."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from annotations.models import Item, Release, ReleaseStatus
from annotations.services.errors import DomainError
from annotations.services.releases import release_build, release_create
from tests.releases.helpers import edit

pytestmark = pytest.mark.django_db


def as_user(client, person):
    client.force_login(person)
    return client


def urls(release) -> dict[str, str]:
    return {
        "list": reverse("releases"),
        "benchmark": reverse("benchmark-releases", args=[release.benchmark.name]),
        "new": reverse("release-new", args=[release.benchmark.name]),
        "detail": reverse("release", args=[release.pk]),
        "file": reverse("release-file", args=[release.pk, "EndoRelease.tsv"]),
        "diff": reverse("release-diff", args=[release.pk]) + f"?against={release.pk}",
    }


def test_every_release_page_needs_a_login_and_the_curator_role(client, people, published):
    for name, url in urls(published).items():
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response.url, name
        for role in ("outsider", "reviewer", "adjudicator"):
            assert as_user(client, people[role]).get(url).status_code == 403, (name, role)
            client.logout()
    retry = reverse("release-retry", args=[published.pk])
    assert client.post(retry).status_code == 302 and "/login/" in client.post(retry).url
    assert as_user(client, people["reviewer"]).post(retry).status_code == 403


def test_release_pages_refuse_the_wrong_method(client, people, published):
    client.force_login(people["curator"])
    pages = urls(published)
    for name in ("list", "benchmark", "detail", "file", "diff"):
        assert client.post(pages[name]).status_code == 405, name
    assert client.put(pages["new"]).status_code == 405
    assert client.get(reverse("release-retry", args=[published.pk])).status_code == 405


def test_the_list_shows_releases_in_a_constant_number_of_queries(
    client, people, published, benchmark, django_assert_num_queries
):
    for version in ("2.0", "3.0"):
        release_create(benchmark=benchmark, name="EndoRelease", version=version)
    client.force_login(people["curator"])
    client.get(reverse("releases"))  # warm the session and role caches
    with django_assert_num_queries(7):
        response = client.get(reverse("benchmark-releases", args=["endo"]))
    assert response.status_code == 200
    assert response.content.decode().count('class="chip rel-') == 3


def test_a_curator_previews_then_confirms_a_release_from_the_form(
    client, people, benchmark, queued
):
    client.force_login(people["curator"])
    form = client.get(reverse("release-new", args=["endo"]))
    assert b"Landmark identification (3)" in form.content  # filter values with their counts
    fields = {"name": "EndoTest", "version": "0.9", "filter_split": ["test"], "withhold_split": ""}

    preview = client.post(reverse("release-new", args=["endo"]), fields)

    assert preview.status_code == 200 and not Release.objects.exists() and queued == []
    shown = preview.context["preview"]
    assert (shown.benchmark_total, shown.matching, shown.released) == (6, 2, 2)
    assert [(str(label), n, kept) for label, n, kept in shown.by_status] == [
        ("Agreed", 1, True),
        ("Adjudicated", 1, True),
    ]
    assert shown.outside_filters == 4 and shown.by_category == [("Lesion", 2)]
    html = preview.content.decode()
    assert "2 items will be released" in html and "withheld: outside the filters" in html
    signature = preview.context["signature"]

    # Building publishes: without the tick it is refused, nothing queued.
    assert 'name="publish"' in html and "required" in html
    unticked = client.post(reverse("release-new", args=["endo"]), {**fields, "confirm": signature})
    assert (
        unticked.status_code == 200 and "Tick “Publish this release”" in unticked.content.decode()
    )
    assert not Release.objects.exists() and queued == []

    response = client.post(
        reverse("release-new", args=["endo"]), {**fields, "confirm": signature, "publish": "1"}
    )

    release = Release.objects.get(name="EndoTest")
    assert response.status_code == 302 and response.url == reverse("release", args=[release.pk])
    assert release.status == ReleaseStatus.QUEUED and release.created_by == people["curator"]
    assert release.filters == {"split": ["test"]} and release.item_count == 2


def test_a_confirmation_of_another_selection_shows_the_preview_again(
    client, people, benchmark, queued
):
    client.force_login(people["curator"])
    fields = {"name": "EndoTest", "version": "0.9", "filter_split": ["test"]}
    signature = client.post(reverse("release-new", args=["endo"]), fields).context["signature"]

    changed = {**fields, "filter_split": ["dev"], "confirm": signature, "publish": "1"}
    response = client.post(reverse("release-new", args=["endo"]), changed)

    assert response.status_code == 200 and response.context["preview"].released == 2
    assert not Release.objects.exists()


def test_an_empty_selection_is_refused_with_its_reason_and_no_build_button(
    client, people, benchmark, queued
):
    client.force_login(people["curator"])
    Item.objects.filter(benchmark=benchmark).update(status="pending")
    fields = {"name": "EndoTest", "version": "0.9"}

    preview = client.post(reverse("release-new", args=["endo"]), fields)

    html = preview.content.decode()
    assert "Nothing to release." in html and "None of the 6 items that match is curated" in html
    assert 'name="confirm"' not in html and "signature" in preview.context
    forced = {**fields, "confirm": preview.context["signature"], "publish": "1"}
    assert client.post(reverse("release-new", args=["endo"]), forced).status_code == 200
    assert not Release.objects.exists() and queued == []
    with pytest.raises(DomainError, match="nothing to release"):
        release_create(benchmark=benchmark, name="EndoTest", version="0.9")


def test_the_form_refuses_a_name_vlmevalkit_would_misread(client, people, benchmark, queued):
    client.force_login(people["curator"])
    response = client.post(
        reverse("release-new", args=["endo"]), {"name": "EndoMMBench", "version": "1"}
    )
    assert response.status_code == 200 and b"circularly" in response.content
    assert not Release.objects.exists() and queued == []


def test_the_release_page_shows_progress_then_files_with_their_checksums(
    client, people, benchmark, published
):
    client.force_login(people["curator"])
    building = release_create(benchmark=benchmark, name="EndoRelease", version="2.0")
    partial = client.get(reverse("release", args=[building.pk]), HTTP_HX_REQUEST="true")
    assert b'id="release-progress"' in partial.content and b"<html" not in partial.content
    assert b"0 / 4" in partial.content

    done = client.get(reverse("release", args=[published.pk]), HTTP_HX_REQUEST="true")
    assert done.headers["HX-Refresh"] == "true"
    page = client.get(reverse("release", args=[published.pk])).content.decode()
    assert published.manifest["files"]["EndoRelease.tsv"]["md5"] in page
    assert "EndoRelease_coco.json" in page and "<svg" in page


def test_a_file_downloads_as_a_stream_of_the_published_bytes(client, people, published):
    client.force_login(people["curator"])
    response = client.get(reverse("release-file", args=[published.pk, "EndoRelease.tsv"]))

    assert response.status_code == 200 and response.streaming
    assert (
        b"".join(response.streaming_content)
        == (Path(published.path) / "EndoRelease.tsv").read_bytes()
    )
    assert "attachment" in response.headers["Content-Disposition"]
    for name in ("nope.tsv", "images", "..", "db.sqlite3"):
        assert client.get(reverse("release-file", args=[published.pk, name])).status_code == 404


def test_a_failed_release_can_be_retried_from_its_page(client, people, benchmark, queued):
    release = release_create(benchmark=benchmark, name="EndoRelease", version="1.0")
    Release.objects.filter(pk=release.pk).update(status=ReleaseStatus.FAILED, error="disk full")
    client.force_login(people["curator"])
    assert b"disk full" in client.get(reverse("release", args=[release.pk])).content

    response = client.post(reverse("release-retry", args=[release.pk]))

    assert response.status_code == 302
    release.refresh_from_db()
    assert release.status == ReleaseStatus.QUEUED and release.error == ""


def test_the_diff_lists_added_removed_and_changed_items_with_their_fields(
    client, people, benchmark, published, django_assert_num_queries
):
    edit(Item.objects.get(benchmark=benchmark, source_index=2), question="Which organ is it?")
    Item.objects.filter(benchmark=benchmark, source_index=4).update(status="disputed")
    Item.objects.filter(benchmark=benchmark, source_index=5).update(status="agreed")
    newer = release_build(
        release=release_create(benchmark=benchmark, name="EndoRelease", version="1.1")
    )
    client.force_login(people["curator"])
    url = reverse("release-diff", args=[newer.pk]) + f"?against={published.pk}"
    client.get(url)

    with django_assert_num_queries(12):
        response = client.get(url)

    diff = response.context["diff"]
    assert (diff.added_count, diff.removed_count, diff.changed_count) == (1, 1, 1)
    assert [row[0] for row in diff.added] == [5] and [row[0] for row in diff.removed] == [4]
    assert diff.changed[0].changes == [
        ("question", "Which finding is shown in frame 2?", "Which organ is it?")
    ]
    assert "Which organ is it?" in response.content.decode()
    assert client.get(reverse("release-diff", args=[newer.pk])).status_code == 404


def test_the_release_page_lists_formula_looking_cells_kept_verbatim_in_the_tsv(
    client, people, benchmark
):
    item = Item.objects.get(benchmark=benchmark, source_index=2)
    edit(item, question='=HYPERLINK("http://x")', options=["-1", "+2 mg", "@cmd", "Ulcer"])
    release = release_create(benchmark=benchmark, name="EndoRelease", version="3.0")
    release = release_build(release=release)

    assert release.warnings["formula_cells"] == {
        "total": 3,
        "cells": [
            [2, "question", '=HYPERLINK("http://x")'],
            [2, "B", "+2 mg"],
            [2, "C", "@cmd"],
        ],
    }  # "-1" is a number: harmless, not listed
    tsv = (Path(release.path) / "EndoRelease.tsv").read_text(encoding="utf-8")
    assert '"=HYPERLINK(""http://x"")"' in tsv and '"+2 mg"' in tsv  # verbatim, not escaped
    page = as_user(client, people["curator"]).get(reverse("release", args=[release.pk]))
    html = page.content.decode()
    assert "open the file in a spreadsheet only as text" in html
    assert "=HYPERLINK(&quot;http://x&quot;)" in html and "@cmd" in html


def test_a_release_without_formula_looking_cells_shows_no_warning(client, people, published):
    assert published.warnings == {}
    page = as_user(client, people["curator"]).get(reverse("release", args=[published.pk]))
    assert b"rel-formulas" not in page.content
