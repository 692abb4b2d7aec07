from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from annotations.formats.gastricx import (
    INDICATOR_NAME_MAX,
    INDICATOR_TEXT_MAX,
    INDICATOR_UNIT_MAX,
)


class Family(models.TextChoices):
    VLMEVAL = "vlmeval", _("VLMEvalKit MCQ")
    ENDOBENCH = "endobench", _("EndoBench")
    MEDQDEG = "medqdeg", _("MedQ-DEG-Bench")
    GASTRICX = "gastricx", _("Gastric-X")


class Benchmark(models.Model):
    """A named collection of items of one family, with its taxonomy and imported column layout."""

    name = models.SlugField(max_length=100, unique=True)
    family = models.CharField(max_length=20, choices=Family.choices)
    description = models.TextField(blank=True)
    # Allowed values per taxonomy field, e.g. {"scene": ["colonoscopy", ...]}.
    taxonomy = models.JSONField(default=dict, blank=True)
    # The imported TSV header in file order, so that an export keeps every column where it was.
    columns = models.JSONField(default=list, blank=True)
    option_letters = models.JSONField(default=list, blank=True)
    # The fixed label sets of classification items, by field: {"tnm": [...], "t": [...], ...}.
    label_sets = models.JSONField(default=dict, blank=True)
    # Set by a curator for a reader study: every pair review of this benchmark is blinded (sides
    # shuffled, "which is degraded?" first), whatever a reviewer's own mode.
    pairs_blinded = models.BooleanField(default=False)
    # A pool holds candidates (EndoBench's 446,535) that benchmarks are drawn from, not a
    # benchmark to review itself.
    is_pool = models.BooleanField(default=False)
    # The pool a benchmark was drawn from (its Draw says how): the hub asks no more otherwise.
    drawn_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="drawn_benchmarks"
    )
    # The pool's item count, kept so that a pool's pages never count it again.
    item_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Bumped by every change of the settings below (services/benchmark_settings.py), so that a
    # change made on a stale page is a conflict, never an overwrite.
    settings_version = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class BenchmarkRevision(models.Model):
    """One change of a benchmark setting (taxonomy, option letters, label sets): who, when, why,
    from what to what, and what it does to the benchmark's items."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()  # the settings version this change made
    setting = models.CharField(max_length=40)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField()
    consequence = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark", "-version", "setting"]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "version", "setting"], name="benchmark_revision_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.benchmark_id} v{self.version} {self.setting}"


class Case(models.Model):
    """A patient-level group of a Gastric-X benchmark: CT volumes, endoscopy image, indicators."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="cases")
    case_id = models.CharField(max_length=100)
    tnm = models.CharField(max_length=40, blank=True)
    reports = models.JSONField(default=dict, blank=True)  # {"diagnostic", "ct", "endoscopy"}
    # case.json's keys ClinReview does not read, kept as given so that nothing imported is lost.
    extra = models.JSONField(default=dict, blank=True)
    endoscopy_image = models.ForeignKey(
        "annotations.Image", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark", "case_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "case_id"], name="case_unique_per_benchmark"
            )
        ]

    def __str__(self) -> str:
        return self.case_id


class Indicator(models.Model):
    """A biochemical indicator of a case (a serum test or tumor marker)."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="indicators")
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=INDICATOR_NAME_MAX)
    value = models.FloatField(null=True, blank=True)
    # The value as the lab wrote it when it is not one number ("<0.5", "positive"): kept, not lost.
    value_text = models.CharField(max_length=INDICATOR_TEXT_MAX, blank=True)
    unit = models.CharField(max_length=INDICATOR_UNIT_MAX, blank=True)
    reference_low = models.FloatField(null=True, blank=True)
    reference_high = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["case", "position"]

    def __str__(self) -> str:
        return f"{self.name} {self.value} {self.unit}"

    @property
    def out_of_range(self) -> bool:
        if self.value is None:
            return False
        low, high = self.reference_low, self.reference_high
        return (low is not None and self.value < low) or (high is not None and self.value > high)
