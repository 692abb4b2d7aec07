from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Assignment(models.Model):
    """An item given to one reviewer for double review (slot 1 or 2)."""

    item = models.ForeignKey(
        "annotations.Item", on_delete=models.CASCADE, related_name="assignments"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    slot = models.PositiveSmallIntegerField()
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "reviewer"], name="assignment_once_per_reviewer"
            ),
            models.UniqueConstraint(fields=["item", "slot"], name="assignment_unique_slot"),
        ]
        indexes = [
            models.Index(fields=["reviewer", "completed_at", "id"], name="assignment_queue"),
        ]


class Verdict(models.TextChoices):
    ACCEPT = "accept", _("Accept")
    EDIT = "edit", _("Edit")
    REJECT = "reject", _("Reject")


class RejectReason(models.TextChoices):
    WRONG_ANSWER = "wrong_answer", _("Wrong answer")
    AMBIGUOUS = "ambiguous", _("Ambiguous")
    IMAGE_INSUFFICIENT = "image_insufficient", _("Image insufficient")
    UNANSWERABLE = "unanswerable", _("Unanswerable")
    DUPLICATE = "duplicate", _("Duplicate")
    CONTAINS_PHI = "contains_phi", _("Contains PHI")


class SeverityJudgement(models.TextChoices):
    TOO_MILD = "too_mild", _("Too mild")
    RIGHT = "right", _("Right")
    TOO_STRONG = "too_strong", _("Too strong")


class Review(models.Model):
    """One reviewer's verdict on one version of an item.

    Pair reviews (degraded/clean twins) also record answerable, realism and severity.
    """

    slot: int | None  # not stored: the reviewer's A/B slot, set by selectors.review.item_reviews

    item = models.ForeignKey("annotations.Item", on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews"
    )
    item_version = models.PositiveIntegerField()
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    content = models.JSONField(null=True, blank=True)  # the proposed content of an edit
    reason = models.CharField(max_length=30, choices=RejectReason.choices, blank=True)
    comment = models.TextField(blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    answerable = models.BooleanField(null=True, blank=True)
    realism = models.PositiveSmallIntegerField(null=True, blank=True)  # 1-5
    severity_judgement = models.CharField(
        max_length=20, choices=SeverityJudgement.choices, blank=True
    )
    identified_degraded_side = models.CharField(
        max_length=5, blank=True
    )  # blinded pair: left/right
    degraded_side = models.CharField(max_length=5, blank=True)  # where it really was shown
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "reviewer", "item_version"], name="review_once_per_version"
            ),
        ]


class ReviewChangeAction(models.TextChoices):
    CHANGED = "changed", _("Changed")
    WITHDRAWN = "withdrawn", _("Withdrawn")


class ReviewChange(models.Model):
    """A reviewer's own review as it was before they changed or withdrew it.

    A review may be changed or withdrawn only until another review of the item version is in;
    the review row then holds the new verdict (or is gone), and this row keeps the earlier one.
    """

    item = models.ForeignKey(
        "annotations.Item", on_delete=models.CASCADE, related_name="review_changes"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_changes"
    )
    review = models.ForeignKey(
        Review, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    item_version = models.PositiveIntegerField()
    action = models.CharField(max_length=10, choices=ReviewChangeAction.choices)
    verdict = models.CharField(max_length=10, choices=Verdict.choices)  # the earlier verdict
    previous = models.JSONField(default=dict)  # every field of the earlier review
    reviewed_at = models.DateTimeField()  # when the earlier verdict was given
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at"]
        indexes = [models.Index(fields=["item", "created_at"], name="review_change_item")]


class AdjudicationChoice(models.TextChoices):
    TAKE_A = "a", _("Take review A")
    TAKE_B = "b", _("Take review B")
    NEW = "new", _("Write a new version")


class Adjudication(models.Model):
    """The final decision on a disputed item."""

    item = models.ForeignKey(
        "annotations.Item", on_delete=models.CASCADE, related_name="adjudications"
    )
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    choice = models.CharField(max_length=5, choices=AdjudicationChoice.choices)
    review_a = models.ForeignKey(Review, null=True, on_delete=models.SET_NULL, related_name="+")
    review_b = models.ForeignKey(Review, null=True, on_delete=models.SET_NULL, related_name="+")
    content = models.JSONField(null=True, blank=True)
    rejected = models.BooleanField(default=False)
    comment = models.TextField(blank=True)
    item_version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at"]
