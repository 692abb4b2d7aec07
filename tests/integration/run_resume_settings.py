"""Settings for the Celery workers of the kill-and-resume test: the app's, plus a short lease.

A task delivered to a worker that dies (SIGKILL, acks_late) stays "unacked" in Redis until its
visibility timeout passes; only then does another worker get it. Production keeps a long one
(CELERY_VISIBILITY_TIMEOUT, two hours, longer than any run); the test shortens it to seconds so that the second
worker picks the run up at once. An earlier redelivery is harmless: `run_execute` is idempotent.
"""

from __future__ import annotations

from clinreview.settings import *  # noqa: F403

CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 2,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
