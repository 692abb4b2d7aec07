from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.models import Benchmark


class Command(BaseCommand):
    help = (
        "Write the kept 3D boxes of one benchmark for 3D Slicer, OHIF and MONAI: per case and "
        "phase a NIfTI label map (boxes/<case>/<phase>.nii.gz) and a DICOM SEG referencing the "
        "de-identified series (<phase>_seg.dcm), into a new folder OUT."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("out", type=Path, help="folder to create")

    def handle(self, *args, name: str, out: Path, **options):
        from annotations.services.box_volumes import benchmark_box_volumes_export

        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        try:
            entry = benchmark_box_volumes_export(benchmark, out)
        except FileExistsError as error:
            raise CommandError(str(error)) from None
        segs = sum("seg" in f for f in entry["files"])
        self.stdout.write(f"{len(entry['files'])} label maps and {segs} DICOM SEG in {out}")
