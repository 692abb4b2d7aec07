"""A curator builds a release in Chromium, watches it publish, compares it with the previous one."""

from __future__ import annotations

import zipfile

import pytest
from playwright.sync_api import expect

from annotations.models import Item, Release
from annotations.services.releases import release_build, release_create
from annotations.tasks import releases as release_tasks
from annotations.tasks.releases import release_build_task
from tests.browser.conftest import docs_picture, nav, screenshot
from tests.factories import make_personas
from tests.releases.helpers import edit, endo_benchmark

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def people():
    return make_personas()


@pytest.fixture
def published(people):
    release = release_create(
        benchmark=endo_benchmark(people), name="EndoRelease", version="1.0", user=people["curator"]
    )
    return release_build(release=release)


@pytest.fixture
def queued(monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr(release_tasks.release_build_task, "delay", sent.append)
    return sent


def test_an_empty_selection_is_refused_with_its_reason(page, live_server, login, people, queued):
    endo_benchmark(people)
    Item.objects.update(status="pending")
    login(people["curator"].username)
    page.goto(f"{live_server.url}/benchmarks/endo/releases/new/")
    page.click("button:has-text('Preview the release')")

    assert "Nothing to release." in page.inner_text("#release-preview")
    expect(page.locator("button[name=confirm]")).to_have_count(0)
    assert not Release.objects.exists() and queued == []


def test_a_curator_builds_a_release_and_compares_it(
    page, live_server, login, people, published, queued
):
    edit(Item.objects.get(source_index=2), question="Which organ is shown?")
    login(people["curator"].username)
    nav(page, "curate", "Releases")
    page.click(".rel-benchmarks >> text=endo")
    page.click("text=New release")
    page.fill("#id_version", "1.1")
    page.select_option("#id_withhold_split", "test")
    screenshot(page, "release_new")
    page.click("button:has-text('Preview the release')")

    preview = page.inner_text("#release-preview")
    assert "4 items will be released" in preview and "withheld: not curated" in preview
    assert "2 items of split “test” are released without their answers" in preview
    assert not Release.objects.filter(version="1.1").exists()  # nothing until confirmed
    shot = screenshot(page, "release_preview")
    docs_picture("release-preview.png").write_bytes(shot.read_bytes())
    page.click("button:has-text('Build the release of 4 items')")
    # Publishing asks first: the build waits for the tick.
    assert page.evaluate("document.querySelector('[name=publish]').validity.valueMissing")
    assert not Release.objects.filter(version="1.1").exists()
    page.check("[data-publish-confirm] input")
    page.click("button:has-text('Build the release of 4 items')")

    page.wait_for_selector("#release-progress")
    assert "Building" in page.inner_text("#release-progress")  # queued for a worker
    screenshot(page, "release_building")
    release_build_task(Release.objects.get(version="1.1").pk)  # what the worker does

    page.wait_for_selector("text=4 items published")  # the polling page reloads when done
    files = page.inner_text("table.rel-files")
    assert "endo_test.tsv" in files and "endo_test_answers.json" in files
    assert "answer key" in files
    screenshot(page, "release_published")
    with page.expect_download() as download_info:
        page.click("[data-release-archive]")
    archive = zipfile.ZipFile(download_info.value.path())
    names = archive.namelist()
    assert any(name.endswith("/endo_test.tsv") for name in names)
    assert any(name.endswith("/manifest.json") for name in names)
    assert archive.testzip() is None

    page.select_option("select[name=against]", label="EndoRelease 1.0 (4)")
    page.click("text=Show the differences")
    page.wait_for_selector(".rel-change")
    assert "Which organ is shown?" in page.inner_text(".rel-change")
    screenshot(page, "release_diff")
