from __future__ import annotations

import logging

from celery import shared_task
from django.contrib.auth import get_user_model

from annotations.models import Job
from annotations.services.degrade import (
    benchmark_degrade,
    degrade_plan,
    parse_kinds,
    parse_severities,
)
from annotations.services.errors import DomainError
from annotations.services.jobs import job_claim, job_fail, job_finish, job_progress_callback

logger = logging.getLogger(__name__)


@shared_task(name="annotations.benchmark_degrade")
def benchmark_degrade_task(job_id: int) -> None:
    """Create a benchmark's degraded twins for a job; a redelivered job finds it already claimed.

    If a worker dies mid-job, a new job with the same arguments creates only the missing twins.
    """
    if not job_claim(job_id=job_id):
        return
    job = Job.objects.select_related("benchmark").get(pk=job_id)
    params = job.params
    user = get_user_model().objects.filter(pk=job.created_by_id).first()
    try:
        kinds, severities = parse_kinds(params["kinds"]), parse_severities(params["severities"])
        planned = degrade_plan(
            benchmark=job.benchmark, kinds=kinds, severities=severities, seed=params["seed"]
        )
        Job.objects.filter(pk=job_id).update(total=len(planned))
        created = benchmark_degrade(
            benchmark=job.benchmark,
            kinds=kinds,
            severities=severities,
            seed=params["seed"],
            user=user,
            progress=job_progress_callback(job_id, every=5),
        )
    except DomainError as error:
        job_fail(job_id=job_id, message=str(error))
    except Exception as error:
        logger.exception("degrade job %s failed", job_id)
        job_fail(job_id=job_id, message=f"{type(error).__name__}: {error}")
        raise
    else:
        job_finish(job_id=job_id, result={"benchmark": job.benchmark.name, "created": created})
