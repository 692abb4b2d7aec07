from __future__ import annotations

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "ClinReview"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from annotations.models import Volume
        from annotations.services.volume_files import volume_files_delete

        post_delete.connect(volume_files_delete, sender=Volume, dispatch_uid="volume-files")
