from __future__ import annotations

from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "ClinReview"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in
        from django.db.models.signals import post_delete

        from annotations.models import Volume
        from annotations.security_headers import session_start
        from annotations.services.volume_files import volume_files_delete

        post_delete.connect(volume_files_delete, sender=Volume, dispatch_uid="volume-files")
        user_logged_in.connect(session_start, dispatch_uid="session-start")
