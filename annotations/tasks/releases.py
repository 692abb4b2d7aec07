"""Building a release on a worker, crash-safe.

The release is claimed with a lease and beats while it builds. If its worker dies, the reaper
puts it back in the queue and the next attempt rebuilds it from scratch into a fresh partial
folder (the dead attempt's partial folder is removed first); nothing is published until the
whole folder is renamed into place.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db.models import Q

from annotations.models import Release, ReleaseStatus
from annotations.services.errors import DomainError
from annotations.services.recovery import Kind, LeaseLost, register
from annotations.services.releases import release_build

logger = logging.getLogger(__name__)


@shared_task(name="annotations.release_build")
def release_build_task(release_id: int) -> None:
    """Build and publish a queued release. Idempotent: only a queued release is claimed; a
    published, failed, deleted or already claimed one is left alone."""
    release = Release.objects.filter(pk=release_id, status=ReleaseStatus.QUEUED).first()
    if release is None:
        return
    try:
        release_build(release=release, claimable=(ReleaseStatus.QUEUED,))
    except LeaseLost:
        logger.warning("release %s was taken over by another worker", release_id)
    except DomainError as error:
        logger.info("release %s not built: %s", release_id, error)
    except Exception:
        # Recorded on the release as failed; the curator retries from its page.
        logger.exception("release %s failed", release_id)


register(
    Kind(
        name="release",
        rows=Release.objects.all,
        running=Q(status=ReleaseStatus.BUILDING),
        waiting=Q(status=ReleaseStatus.QUEUED),
        requeue={"status": ReleaseStatus.QUEUED},
        send=lambda pk: release_build_task.delay(pk),
    )
)
