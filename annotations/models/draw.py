"""Benchmarks drawn from a pool: the draw (seed, strata, options, report) and its quotas."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Draw(models.Model):
    """How a benchmark was drawn from its pool: enough to draw it again (and to top it up)."""

    benchmark = models.OneToOneField(
        "annotations.Benchmark", on_delete=models.CASCADE, related_name="draw"
    )
    pool = models.ForeignKey(
        "annotations.Benchmark", on_delete=models.PROTECT, related_name="draws"
    )
    seed = models.BigIntegerField()
    # The item fields a stratum is made of, in order, e.g. ["scene", "task"].
    fields = models.JSONField(default=list)
    balance_answers = models.BooleanField(default=False)
    exclude_near_duplicates = models.BooleanField(default=False)
    # Names of the benchmarks and pools whose images are left out.
    exclude_images_of = models.JSONField(default=list, blank=True)
    # What the first draw and each top-up said: counts drawn, excluded and why, letters.
    report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.benchmark_id} from {self.pool_id} (seed {self.seed})"


class DrawStratum(models.Model):
    """One stratum of a draw: its field values and how many items it is to hold."""

    draw = models.ForeignKey(Draw, on_delete=models.CASCADE, related_name="strata")
    # The values of the draw's fields, in their order (the stratum's identity).
    values = models.JSONField()
    label = models.CharField(max_length=500)
    quota = models.PositiveIntegerField()
    # Set when the pool had no eligible item left for this stratum at the last draw or top-up.
    exhausted = models.BooleanField(default=False)

    class Meta:
        ordering = ["draw", "label"]
        constraints = [
            models.UniqueConstraint(fields=["draw", "label"], name="draw_stratum_unique_label")
        ]

    def __str__(self) -> str:
        return f"{self.label}: {self.quota}"
