from __future__ import annotations

import string

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

LETTERS = string.ascii_uppercase


class ItemStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    IN_REVIEW = "in_review", _("In review")
    AGREED = "agreed", _("Agreed")
    DISPUTED = "disputed", _("Disputed")
    ADJUDICATED = "adjudicated", _("Adjudicated")
    REJECTED = "rejected", _("Rejected")


CURATED_STATUSES = (ItemStatus.AGREED, ItemStatus.ADJUDICATED)


class Severity(models.TextChoices):
    NONE = "", _("Not a pair item")
    CLEAN = "clean", _("Clean")
    MILD = "mild", _("Mild")
    SEVERE = "severe", _("Severe")


class ItemKind(models.TextChoices):
    """What an item asks for, and so what its reviewed content and its scoring are."""

    MCQ = "mcq", _("Multiple choice")  # options + the answer's letter
    OPEN = "open", _("Open answer")  # a free-text reference (a report, an open question)
    LABEL = "label", _("Classification")  # a label from the benchmark's label set (TNM)
    BOX = "box", _("Localization")  # a target box on a CT phase or an image
    RETRIEVAL = "retrieval", _("Retrieval")  # a report that belongs to its case


class ItemQuerySet(models.QuerySet):
    def curated(self) -> ItemQuerySet:
        return self.filter(status__in=CURATED_STATUSES)

    def in_benchmark(self, benchmark) -> ItemQuerySet:
        return self.filter(benchmark=benchmark)


# The taxonomy fields we keep as indexed columns, so that filters and breakdowns stay fast.
TAXONOMY_FIELDS = (
    "category",
    "l2_category",
    "split",
    "task",
    "subtask",
    "scene",
    "dataset",
    "modality",
    "source",
)
# Imported column -> Item field (imports read them, releases write them back under the same
# names). Every other column is kept in Item.extra under its own name.
COLUMN_FIELDS = {
    "category": "category",
    "l2-category": "l2_category",
    "split": "split",
    "task": "task",
    "subtask": "subtask",
    "scene": "scene",
    "dataset": "dataset",
    "modality": "modality",
    "source": "source",
    "degradation_type": "degradation_type",
    "degradation_severity": "degradation_severity",
}


class Item(models.Model):
    """One visual question–answer pair with its images, taxonomy and review status.

    `version` increases with every content change; each change is an ItemRevision, and writes
    carry the version they were based on so that a stale write is detected, never applied.
    """

    benchmark = models.ForeignKey(
        "annotations.Benchmark", on_delete=models.CASCADE, related_name="items"
    )
    case = models.ForeignKey(
        "annotations.Case", null=True, blank=True, on_delete=models.CASCADE, related_name="items"
    )
    source_index = models.BigIntegerField()  # the `index` column as imported
    question = models.TextField()
    hint = models.TextField(blank=True)
    # Option texts by position (A, B, ...); '' for an unused option column, kept for round trips.
    options = models.JSONField(default=list)
    kind = models.CharField(max_length=12, choices=ItemKind.choices, default=ItemKind.MCQ)
    # The letter of a multiple-choice item; the label of a classification item.
    answer = models.CharField(max_length=200)
    # The reference text of an open item (a report), or the report of a retrieval pair.
    reference = models.TextField(blank=True)
    # What else the kind needs: a label item's field ({"field": "t"}), a box item's target
    # ({"label", "phase" or "image", "box"/"voxel"}), a retrieval pair's report kind.
    target = models.JSONField(null=True, blank=True)
    category = models.CharField(max_length=200, blank=True, db_index=True)
    l2_category = models.CharField(max_length=200, blank=True)
    split = models.CharField(max_length=50, blank=True, db_index=True)
    task = models.CharField(max_length=200, blank=True, db_index=True)
    subtask = models.CharField(max_length=200, blank=True)
    scene = models.CharField(max_length=200, blank=True)
    dataset = models.CharField(max_length=200, blank=True)
    modality = models.CharField(max_length=50, blank=True, db_index=True)
    source = models.CharField(max_length=200, blank=True)
    # Every other imported column, by name (the benchmark keeps the column order).
    extra = models.JSONField(default=dict, blank=True)
    clean_twin = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="degraded_twins"
    )
    degradation_type = models.CharField(max_length=40, blank=True)
    degradation_severity = models.CharField(max_length=10, choices=Severity.choices, blank=True)
    degradation_params = models.JSONField(null=True, blank=True)
    degradation_seed = models.BigIntegerField(null=True, blank=True)
    # The pool item this item was drawn as (its lineage); kept when the pool item is gone only
    # as the `pool_index` column in `extra`.
    pool_item = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="drawn_as"
    )
    status = models.CharField(
        max_length=20, choices=ItemStatus.choices, default=ItemStatus.PENDING, db_index=True
    )
    version = models.PositiveIntegerField(default=1)
    images = models.ManyToManyField(
        "annotations.Image", through="annotations.ItemImage", related_name="items"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ItemQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark", "source_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "source_index"], name="item_unique_index_per_benchmark"
            ),
            # A degraded twin made by our engine exists once: two jobs racing cannot both make it.
            models.UniqueConstraint(
                fields=[
                    "clean_twin",
                    "degradation_type",
                    "degradation_severity",
                    "degradation_seed",
                ],
                condition=models.Q(clean_twin__isnull=False, degradation_seed__isnull=False),
                name="item_degraded_twin_once",
            ),
            # A pool item is drawn into a benchmark at most once, whatever happened to it since.
            models.UniqueConstraint(
                fields=["benchmark", "pool_item"],
                condition=models.Q(pool_item__isnull=False),
                name="item_drawn_once_per_benchmark",
            ),
        ]
        indexes = [
            models.Index(fields=["benchmark", "status"], name="item_benchmark_status"),
            models.Index(fields=["benchmark", "kind"], name="item_benchmark_kind"),
            # The adjudication queue: disputed items, oldest dispute first.
            models.Index(
                fields=["updated_at", "id"],
                condition=models.Q(status="disputed"),
                name="item_dispute_queue",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.benchmark_id}#{self.source_index}"

    @property
    def letters(self) -> list[str]:
        return list(LETTERS[: len(self.options)])

    @property
    def lettered_options(self) -> list[tuple[str, str]]:
        """(letter, text) for the options that are in use, in order."""
        return [(letter, text) for letter, text in zip(LETTERS, self.options, strict=False) if text]

    @property
    def answer_text(self) -> str:
        """The text of the answer's option; '' without a single-letter answer (`str.find('')` is
        0, which would name option A for an item that has no answer)."""
        position = LETTERS.find(self.answer) if len(self.answer) == 1 else -1
        return self.options[position] if 0 <= position < len(self.options) else ""

    def content(self) -> dict:
        """The reviewable content of this item, as stored in revisions and proposed by reviews.

        A multiple-choice item's content is the same as before item kinds existed, so its
        revisions and reviews compare across that change.
        """
        content: dict[str, object] = {"question": self.question, "hint": self.hint}
        if self.kind == ItemKind.MCQ:
            content.update(options=list(self.options), answer=self.answer)
        elif self.kind == ItemKind.LABEL:
            content.update(answer=self.answer, target=self.target)
        elif self.kind in (ItemKind.OPEN, ItemKind.RETRIEVAL):
            content.update(reference=self.reference, target=self.target)
        else:
            content.update(target=self.target)
        return content

    def taxonomy(self) -> dict[str, str]:
        return {field: getattr(self, field) for field in TAXONOMY_FIELDS if getattr(self, field)}


class ItemImage(models.Model):
    """The ordered images of an item (several for CT phases of a case or a clean/degraded pair)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="item_images")
    image = models.ForeignKey("annotations.Image", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "position"], name="item_image_unique_position")
        ]


class RevisionReason(models.TextChoices):
    IMPORTED = "imported", _("Imported")
    EDITED = "edited", _("Edited")
    AGREED_EDIT = "agreed_edit", _("Edit agreed by both reviewers")
    ADJUDICATED = "adjudicated", _("Adjudicated")
    DEGRADED = "degraded", _("Degraded twin created")
    BALANCED = "balanced", _("Answer position balanced")
    DRAWN = "drawn", _("Drawn from a pool")


class ItemRevision(models.Model):
    """One version of an item's content. Version 1 is the imported content."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    replaced_version = models.PositiveIntegerField(null=True, blank=True)
    content = models.JSONField()
    reason = models.CharField(max_length=20, choices=RevisionReason.choices)
    note = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "version"]
        constraints = [
            models.UniqueConstraint(fields=["item", "version"], name="revision_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.item} v{self.version} ({self.reason})"
