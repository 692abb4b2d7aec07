from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Item, Job, JobStatus
from annotations.services.jobs import job_create
from annotations.tasks.degrade import benchmark_degrade_task
from tests.pairs.helpers import make_pair_benchmark
from tests.support.jobs import run_job

pytestmark = pytest.mark.django_db

FORM = {"kinds": ["gaussian_blur", "low_dose"], "severities": ["mild"], "seed": "4"}


def test_the_curator_sees_the_form_with_clean_items_by_modality(client, people):
    make_pair_benchmark()
    client.force_login(people["curator"])
    response = client.get(reverse("benchmark-degrade", args=["medq"]))
    assert response.status_code == 200
    overview = response.context["overview"]
    assert overview.clean_by_modality == [("CT", 1), ("Dermoscopy", 1)]
    assert overview.twins == 0


def test_starting_degradation_creates_a_job_and_queues_the_task(
    client, people, django_capture_on_commit_callbacks
):
    benchmark = make_pair_benchmark()
    client.force_login(people["curator"])
    # Captured, not executed: the test runs the task itself below, not through the broker.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("benchmark-degrade", args=["medq"]), FORM)
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == reverse("job", args=[job.pk])
    assert (job.kind, job.benchmark, job.created_by) == ("degrade", benchmark, people["curator"])
    assert job.params == {"kinds": ["gaussian_blur", "low_dose"], "severities": ["mild"], "seed": 4}
    assert len(callbacks) == 1
    assert not Item.objects.filter(clean_twin__isnull=False).exists()  # the worker makes them
    run_job(job.pk)
    assert (
        Item.objects.filter(clean_twin__isnull=False).count() == 3
    )  # blur on both, low dose on CT


def test_an_empty_choice_is_refused(client, people):
    make_pair_benchmark()
    client.force_login(people["curator"])
    response = client.post(reverse("benchmark-degrade", args=["medq"]), {"seed": "1"})
    assert response.status_code == 200
    assert response.context["form"].errors.keys() == {"kinds", "severities"}
    assert not Job.objects.exists()


@pytest.mark.parametrize("persona", ["reviewer", "adjudicator", "outsider"])
def test_only_curators_may_degrade(client, people, persona):
    make_pair_benchmark()
    client.force_login(people[persona])
    url = reverse("benchmark-degrade", args=["medq"])
    assert client.get(url).status_code == 403
    assert client.post(url, FORM).status_code == 403
    assert not Job.objects.exists()


def test_degrade_page_needs_login_and_known_methods(client, people):
    make_pair_benchmark()
    url = reverse("benchmark-degrade", args=["medq"])
    assert "/login/" in client.get(url).url
    assert "/login/" in client.post(url, FORM).url
    client.force_login(people["curator"])
    assert client.put(url).status_code == 405
    assert client.get(reverse("benchmark-degrade", args=["nope"])).status_code == 404


def test_the_task_makes_the_twins_and_finishes_the_job(people):
    benchmark = make_pair_benchmark()
    params = {"kinds": ["gaussian_blur", "low_dose"], "severities": ["mild", "severe"], "seed": 4}
    job = job_create(kind="degrade", params=params, user=people["curator"], benchmark=benchmark)
    job = run_job(job.pk)
    assert job.status == JobStatus.DONE
    assert job.result == {"benchmark": "medq", "created": 6}
    assert (job.total, job.done) == (6, 6)
    twin = Item.objects.filter(clean_twin__isnull=False).first()
    assert twin.revisions.get().author == people["curator"]
    # a second job with the same arguments has nothing left to do
    again = job_create(kind="degrade", params=params, user=people["curator"], benchmark=benchmark)
    again = run_job(again.pk)
    assert (again.status, again.result["created"], again.total) == (JobStatus.DONE, 0, 0)
    assert Item.objects.filter(clean_twin__isnull=False).count() == 6


def test_a_claimed_job_is_not_run_twice(people):
    benchmark = make_pair_benchmark()
    job = job_create(kind="degrade", params=FORM | {"seed": 1}, benchmark=benchmark)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING)
    benchmark_degrade_task(job.pk)
    assert not Item.objects.filter(clean_twin__isnull=False).exists()


def test_a_job_with_bad_arguments_fails_with_a_message(people):
    benchmark = make_pair_benchmark()
    params = {"kinds": ["sepia"], "severities": ["mild"], "seed": 0}
    job = job_create(kind="degrade", params=params, benchmark=benchmark)
    benchmark_degrade_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "sepia" in job.message
