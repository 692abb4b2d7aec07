from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from annotations.models.jobs import Leased


class ReleaseStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    BUILDING = "building", _("Building")
    PUBLISHED = "published", _("Published")
    FAILED = "failed", _("Failed")


class Release(Leased):
    """An immutable, versioned export of a benchmark: files, md5/sha256, counts, provenance."""

    benchmark = models.ForeignKey(
        "annotations.Benchmark", on_delete=models.PROTECT, related_name="releases"
    )
    name = models.CharField(max_length=100)
    version = models.CharField(max_length=40)
    status = models.CharField(
        max_length=20, choices=ReleaseStatus.choices, default=ReleaseStatus.BUILDING
    )
    filters = models.JSONField(default=dict, blank=True)
    include_all = models.BooleanField(default=False)
    path = models.CharField(max_length=500, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    progress = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    # What the files hold as written but a curator should know: {"formula_cells": {...}}.
    warnings = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="release_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


class ReleaseItem(models.Model):
    """Which revision of which item a release contains."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="release_items")
    item = models.ForeignKey("annotations.Item", on_delete=models.PROTECT, related_name="+")
    item_version = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["release", "item"], name="release_item_once")
        ]
