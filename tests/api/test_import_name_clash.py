"""Two imports of one name (issue 29): the second is refused before its upload is accepted; if
both were accepted anyway, the one that loses says the name is taken and offers no retry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.db import IntegrityError
from django.urls import reverse

from annotations.models import Benchmark, Job, JobStatus
from annotations.selectors.jobs import job_retryable
from annotations.tasks.imports import benchmark_import_task
from tests.api.test_imports import client_of, post
from tests.factories import make_personas

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_a_second_import_of_a_name_under_way_is_refused_before_its_upload(
    django_capture_on_commit_callbacks,
):
    people = make_personas()
    client = client_of(people["curator"])
    with django_capture_on_commit_callbacks(execute=False):
        first = post(client, name="twice")
        second = post(client, name="twice")
    assert first.status_code == 202
    assert second.status_code == 400 and second.json()["code"] == "name_taken"
    assert Job.objects.count() == 1


def test_the_import_that_loses_the_name_says_so_and_offers_no_retry(
    django_capture_on_commit_callbacks,
):
    people = make_personas()
    client = client_of(people["curator"])
    with django_capture_on_commit_callbacks(execute=False):
        first = post(client, name="race")
    # Both accepted at the same moment (the second job as its request saw the world).
    params = dict(Job.objects.get().params)
    copy = Path(params["path"]).parent.with_name("second") / Path(params["path"]).name
    copy.parent.mkdir()
    shutil.copy(params["path"], copy)
    loser = Job.objects.create(kind="import", params={**params, "path": str(copy)})
    benchmark_import_task(first.json()["id"])
    benchmark_import_task(loser.pk)

    loser.refresh_from_db()
    assert loser.status == JobStatus.FAILED
    assert "already exists" in loser.message and "Error" not in loser.message
    assert not job_retryable(loser)
    answer = client.get(reverse("api-job", args=[loser.pk])).json()
    assert answer["state"] == "failed"
    assert Benchmark.objects.filter(name="race").count() == 1


def test_an_integrity_error_of_a_name_committed_meanwhile_is_a_refusal(monkeypatch, tmp_path):
    """The two imports really simultaneous: both passed the name check, the other committed
    first, this one's insert fails."""
    from annotations.tasks import imports

    def committed_meanwhile(**kwargs):
        Benchmark.objects.create(name=kwargs["name"], family="endobench")
        raise IntegrityError('duplicate key value violates unique constraint "name"')

    monkeypatch.setattr(imports, "benchmark_import_run", committed_meanwhile)
    upload = tmp_path / "media" / "uploads" / "x" / "upload.tsv"
    upload.parent.mkdir(parents=True)
    upload.write_text("index\tquestion\n")
    job = Job.objects.create(
        kind="import", params={"path": str(upload), "family": "endobench", "name": "race"}
    )
    benchmark_import_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.result["code"] == "name_taken"
    assert "IntegrityError" not in job.message and not job_retryable(job)
    assert not upload.exists()
