"""A benchmark's settings change only on its settings page, through the service, with a
revision; a stale page is a conflict, a change that would re-letter items is refused."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotations.models import Benchmark, BenchmarkRevision
from annotations.services.benchmark_settings import SettingsRefused, benchmark_settings_change
from annotations.services.errors import ConflictError, DomainError
from annotations.services.releases import release_create
from annotations.services.runs.tasks import choice_options
from tests.factories import make_benchmark, make_item, make_personas
from tests.support.page_forms import PageForm

pytestmark = pytest.mark.django_db

TNM = ["T1N0M0", "T2N0M0", "T3N1M0"]
FORM = "//form[@data-settings-form]"


@pytest.fixture
def people():
    return make_personas()


@pytest.fixture
def benchmark():
    """Label items of a field 'tnm' whose set the import did not give (so nothing lettered them)."""
    benchmark = make_benchmark("gx-settings", label_sets={"t": ["T1", "T2"]})
    for index, answer in enumerate(["T2N0M0", "T3N1M0"], start=1):
        make_item(
            benchmark, index=index, kind="label", options=[], answer=answer,
            target={"field": "tnm"}, status="agreed", split="dev",
        )  # fmt: skip
    make_item(
        benchmark, index=3, kind="label", options=[], answer="T2",
        target={"field": "t"}, status="agreed", split="dev",
    )  # fmt: skip
    return benchmark


def settings_page(client, benchmark):
    return PageForm(client.get(reverse("benchmark-settings", args=[benchmark.name])), FORM)


def test_the_hub_links_the_settings_page_for_curators(client, people, benchmark):
    client.force_login(people["curator"])
    html = client.get(reverse("benchmark", args=[benchmark.name])).content.decode()
    assert reverse("benchmark-settings", args=[benchmark.name]) in html


def test_a_change_through_the_page_makes_a_revision_and_is_listed(client, people, benchmark):
    client.force_login(people["curator"])
    form = settings_page(client, benchmark)
    sets = json.loads(form.form.inputs["label_sets"].value)
    assert sets == {"t": ["T1", "T2"]}
    form.set("label_sets", json.dumps({**sets, "tnm": TNM}))
    form.set("reason", "the TNM set was missing from the import")
    response = form.submit(client)
    assert response.status_code == 302
    benchmark.refresh_from_db()
    assert benchmark.label_sets == {"t": ["T1", "T2"], "tnm": TNM}
    assert benchmark.settings_version == 2
    revision = BenchmarkRevision.objects.get(benchmark=benchmark)
    assert (revision.setting, revision.version, revision.author) == (
        "label_sets",
        2,
        people["curator"],
    )
    assert revision.before == {"t": ["T1", "T2"]}
    assert revision.after["tnm"] == TNM
    assert revision.reason == "the TNM set was missing from the import"
    assert "2 items" in revision.consequence  # the items lettered from now on, named
    html = client.get(reverse("benchmark-settings", args=[benchmark.name])).content.decode()
    assert f'data-revision="{revision.pk}"' in html
    assert "the TNM set was missing from the import" in html


def test_a_stale_page_is_a_conflict_and_overwrites_nothing(client, people, benchmark):
    client.force_login(people["curator"])
    first, second = settings_page(client, benchmark), settings_page(client, benchmark)
    first.set("option_letters", json.dumps(["A", "B", "C", "D", "E"]))
    first.set("reason", "five options")
    assert first.submit(client).status_code == 302
    second.set("taxonomy", json.dumps({"category": ["Lesion"]}))
    second.set("reason", "only lesions")
    response = second.submit(client)
    assert response.status_code == 409
    assert "reload" in response.content.decode()
    benchmark.refresh_from_db()
    assert benchmark.option_letters == ["A", "B", "C", "D", "E"]
    assert benchmark.taxonomy == {}
    assert BenchmarkRevision.objects.filter(benchmark=benchmark).count() == 1
    with pytest.raises(ConflictError):
        benchmark_settings_change(benchmark, people["curator"], {"taxonomy": {}}, "why", 1)


def test_a_change_that_would_re_letter_items_is_refused_and_names_them(client, people, benchmark):
    client.force_login(people["curator"])
    form = settings_page(client, benchmark)
    form.set("label_sets", json.dumps({"t": ["T2", "T1"]}))  # item 3's gold letter would move
    form.set("reason", "reorder")
    response = form.submit(client)
    assert response.status_code == 400
    item = benchmark.items.get(source_index=3)
    assert reverse("item", args=[item.pk]) in response.content.decode()
    benchmark.refresh_from_db()
    assert benchmark.label_sets == {"t": ["T1", "T2"]}
    assert not BenchmarkRevision.objects.exists()
    mcq = make_item(benchmark, index=9, status="agreed", split="dev")  # four options
    with pytest.raises(SettingsRefused) as refused:
        benchmark_settings_change(
            benchmark, people["curator"], {"option_letters": ["A", "B", "C"]}, "fewer", 1
        )
    assert refused.value.items == [mcq.pk]


def test_name_family_and_columns_never_change(people, benchmark):
    for setting in ("name", "family", "columns"):
        with pytest.raises(DomainError, match="cannot be changed"):
            benchmark_settings_change(benchmark, people["curator"], {setting: "x"}, "why", 1)


def test_a_non_curator_can_neither_see_nor_post_the_page(client, people, benchmark):
    url = reverse("benchmark-settings", args=[benchmark.name])
    client.force_login(people["curator"])
    form = settings_page(client, benchmark)
    form.set("label_sets", json.dumps({"t": ["T1", "T2"], "tnm": TNM}))
    form.set("reason", "x")
    for persona in ("reviewer", "adjudicator"):
        client.force_login(people[persona])
        assert client.get(url).status_code == 403
        assert form.submit(client).status_code == 403
    client.logout()
    assert client.get(url).status_code in (302, 403)
    benchmark.refresh_from_db()
    assert "tnm" not in benchmark.label_sets
    assert not BenchmarkRevision.objects.exists()


def test_releases_and_runs_after_a_change_use_the_new_settings(client, people, benchmark):
    with pytest.raises(DomainError, match="'tnm'"):
        release_create(benchmark=benchmark, name="GxBefore", version="1.0")
    client.force_login(people["curator"])
    form = settings_page(client, benchmark)
    form.set("label_sets", json.dumps({"t": ["T1", "T2"], "tnm": TNM}))
    form.set("reason", "add the TNM set")
    assert form.submit(client).status_code == 302
    benchmark = Benchmark.objects.get(pk=benchmark.pk)
    release = release_create(benchmark=benchmark, name="GxAfter", version="1.0")
    assert release.pk
    item = benchmark.items.get(source_index=2)
    options, gold = choice_options(item, benchmark.label_sets)  # what a run asks and scores
    assert (list(options.values()), gold) == (TNM, "C")
    html = client.get(reverse("benchmark-settings", args=[benchmark.name])).content.decode()
    assert "add the TNM set" in html


def test_the_admin_shows_the_settings_but_cannot_send_them(client, benchmark):
    from django.contrib.auth import get_user_model

    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-1234")
    client.force_login(root)
    url = reverse("admin:annotations_benchmark_change", args=[benchmark.pk])
    form = PageForm(client.get(url), "//form[@id='benchmark_form']")
    for setting in ("label_sets", "option_letters", "taxonomy", "settings_version"):
        assert setting not in form.form.inputs
    form.set("description", "edited in the admin")
    form.action = form.action or url  # the admin's form posts to its own page
    assert form.submit(client).status_code == 302
    benchmark.refresh_from_db()
    assert benchmark.description == "edited in the admin"
    assert (benchmark.label_sets, benchmark.settings_version) == ({"t": ["T1", "T2"]}, 1)
