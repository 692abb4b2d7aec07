from __future__ import annotations

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Convert CT volumes imported before chunked storage (de-identified DICOM with pixels, "
        "voxels.npy, voxels.raw.gz) to the stored-once form: compressed chunks and DICOM "
        "headers without pixels. Idempotent."
    )
    requires_system_checks: list[str] = []

    def handle(self, *args, **options):
        from annotations.services.volume_store import volumes_store_once

        report = volumes_store_once()
        ratio = report.bytes_after / report.bytes_before if report.bytes_before else 1.0
        self.stdout.write(
            f"{report.converted} volumes converted: {report.bytes_before / 2**20:.1f} MiB → "
            f"{report.bytes_after / 2**20:.1f} MiB ({ratio:.2f}×)"
        )
