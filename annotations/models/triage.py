"""Triage bookkeeping: cached perceptual hashes, per-benchmark settings, reason index."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ImageHash(models.Model):
    """Perceptual hashes of a stored image, computed once from its file (16 hex digits each).

    Hex text rather than an integer: a 64-bit hash does not fit a signed BIGINT.
    """

    image = models.OneToOneField(
        "annotations.Image", on_delete=models.CASCADE, primary_key=True, related_name="hashes"
    )
    phash = models.CharField(max_length=16, blank=True)  # '' when the file could not be read
    dhash = models.CharField(max_length=16, blank=True)


class TriageSetting(models.Model):
    """A benchmark's triage switch ("review the suspects first") and its last summary."""

    benchmark = models.OneToOneField(
        "annotations.Benchmark", on_delete=models.CASCADE, related_name="triage_setting"
    )
    suspects_first = models.BooleanField(default=False, verbose_name=_("Review the suspects first"))
    summary = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)


class TriageFlag(models.Model):
    """One reason code of one suspect item: lets the triage page filter by reason with an index
    (the reasons themselves live in Suspicion.reasons, a JSON list SQLite cannot search)."""

    item = models.ForeignKey(
        "annotations.Item", on_delete=models.CASCADE, related_name="triage_flags"
    )
    benchmark = models.ForeignKey(
        "annotations.Benchmark", on_delete=models.CASCADE, related_name="+"
    )
    code = models.CharField(max_length=40)
    weight = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["benchmark", "code"], name="triage_flag_code")]
        constraints = [
            models.UniqueConstraint(fields=["item", "code"], name="triage_flag_once_per_code")
        ]
