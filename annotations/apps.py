from __future__ import annotations

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "ClinReview"
    default_auto_field = "django.db.models.BigAutoField"
