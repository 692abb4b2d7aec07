"""draw_benchmark starts without the imaging and triage libraries a draw without an image
exclusion never uses (they are imported by the check that needs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from annotations.management.commands.draw_benchmark import Command

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pydicom", "SimpleITK", "scipy", "openai", "imagehash")


def test_draw_benchmark_skips_the_system_checks():
    assert Command.requires_system_checks == []


def test_draw_benchmark_imports_no_heavy_library():
    code = (
        "import django, json, sys; django.setup();"
        "import annotations.management.commands.draw_benchmark;"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "clinreview.settings", "DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
