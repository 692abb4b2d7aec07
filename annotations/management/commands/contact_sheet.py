from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotations.imaging.sheet import make_contact_sheet


class Command(BaseCommand):
    help = "Write a PNG contact sheet of every degradation kind (clean, mild, severe) to PATH."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path, help="where to write the PNG")
        parser.add_argument("--size", type=int, default=160, help="tile size in pixels")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, path: Path, size: int, seed: int, **options):
        if not 16 <= size <= 1024:
            raise CommandError("--size must be between 16 and 1024 pixels.")
        written = make_contact_sheet(path, size, seed=seed)
        self.stdout.write(f"wrote {written}")
