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


class Job(models.Model):
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
