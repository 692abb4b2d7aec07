"""Building a release on a worker."""

from __future__ import annotations

import logging

from celery import shared_task

from annotations.models import Release, ReleaseStatus
from annotations.services.errors import DomainError
from annotations.services.releases import release_build

logger = logging.getLogger(__name__)


@shared_task(name="annotations.release_build")
def release_build_task(release_id: int) -> None:
    """Build and publish a release. Idempotent: a published (or failed, or deleted) release is left
    alone; a redelivered task after a killed worker rebuilds from a fresh temporary folder; a
    concurrent duplicate finds the release locked and stops."""
    release = Release.objects.filter(pk=release_id, status=ReleaseStatus.BUILDING).first()
    if release is None:
        return
    try:
        release_build(release=release)
    except DomainError as error:
        # Locked by another worker, or refused: the release row says which.
        logger.info("release %s not built: %s", release_id, error)
    except Exception:
        # Recorded on the release as failed by release_build; the curator retries from its page.
        logger.exception("release %s failed", release_id)
