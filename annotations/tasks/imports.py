from __future__ import annotations

import shutil
from pathlib import Path

from celery import shared_task
from django.contrib.auth import get_user_model

from annotations.models import Job
from annotations.services.errors import DomainError
from annotations.services.imports import ImportFailed, benchmark_import
from annotations.services.jobs import job_claim, job_fail, job_finish, job_progress_callback


@shared_task(name="annotations.benchmark_import")
def benchmark_import_task(job_id: int) -> None:
    """Import an uploaded file as a benchmark; the job records the result or every problem."""
    if not job_claim(job_id=job_id):
        return
    job = Job.objects.get(pk=job_id)
    params = job.params
    user = get_user_model().objects.filter(pk=job.created_by_id).first()
    upload = Path(params["path"])
    try:
        benchmark = benchmark_import(
            path=upload,
            family=params["family"],
            name=params["name"],
            user=user,
            progress=job_progress_callback(job_id),
        )
    except ImportFailed as error:
        job_fail(
            job_id=job_id,
            message=str(error),
            result={"problems": [str(p) for p in error.problems[:500]]},
        )
    except DomainError as error:
        job_fail(job_id=job_id, message=str(error))
    else:
        job_finish(
            job_id=job_id, result={"benchmark": benchmark.name, "items": benchmark.items.count()}
        )
    finally:
        shutil.rmtree(upload.parent, ignore_errors=True)
