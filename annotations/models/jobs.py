from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class Leased(models.Model):
    """Bookkeeping that lets background work survive the death of its worker.

    A worker that claims the row bumps `attempts` (its lease) and beats `heartbeat_at` while it
    works; the reaper (`annotations.services.recovery`) requeues running rows whose heartbeat went
    quiet. A queued row's `heartbeat_at` is when its task was last sent, so a task message lost
    with its worker is sent again.
    """

    heartbeat_at = models.DateTimeField(null=True, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    recoveries = models.PositiveIntegerField(default=0)  # times requeued after a worker died

    class Meta:
        abstract = True


class Job(Leased):
    """A long piece of background work (import, degrade, triage...) with visible progress."""

    kind = models.CharField(max_length=40)
    benchmark = models.ForeignKey(
        "annotations.Benchmark",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="jobs",
    )
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 0.0


class JobChunk(Leased):
    """One share of a job that any worker may take: a range of a degradation job's twins, or of
    the images whose hashes a triage needs. What it covers is fixed when the job is planned."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="chunks")
    number = models.PositiveIntegerField()
    status = models.CharField(
        max_length=20, choices=JobStatus.choices, default=JobStatus.QUEUED, db_index=True
    )
    params = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="job_chunk_once"),
        ]

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 0.0


class Suspicion(models.Model):
    """How likely an item is to be wrong, and why (triage)."""

    item = models.OneToOneField(
        "annotations.Item", on_delete=models.CASCADE, related_name="suspicion"
    )
    score = models.FloatField(default=0.0, db_index=True)
    reasons = models.JSONField(
        default=list, blank=True
    )  # [{"code", "weight", "detail", "evidence"}]
    computed_at = models.DateTimeField(auto_now=True)


class UserProfile(models.Model):
    """Per-user preferences (interface language)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile"
    )
    language = models.CharField(max_length=10, blank=True)
