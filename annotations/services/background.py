"""Retrying failed background work of any kind from the Jobs page (apart from `services.jobs`,
which runs and triage use, so that the job machinery does not import the kinds that use it)."""

from __future__ import annotations

from annotations.models import Job, Release, Run
from annotations.services.jobs import job_retry
from annotations.services.releases import release_retry
from annotations.services.runs import run_retry


def background_retry(*, work: Job | Run | Release) -> None:
    """Retry failed background work through the retry of its own kind: a model run's (its
    failed and unanswered items), a release's (a fresh build) or a job's."""
    if isinstance(work, Run):
        run_retry(run=work)
    elif isinstance(work, Release):
        release_retry(release=work)
    else:
        job_retry(job=work)
