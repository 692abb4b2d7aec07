"""Data commands start without the project's checks and without imports they do not use."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pydicom", "SimpleITK", "scipy", "openai")
DATA_COMMANDS = (
    "export_release", "import_benchmark", "run_model", "degrade", "triage", "assign_reviews",
)  # fmt: skip


@pytest.mark.parametrize("name", DATA_COMMANDS)
def test_data_commands_skip_the_system_checks(name):
    module = importlib.import_module(f"annotations.management.commands.{name}")
    assert module.Command.requires_system_checks == []


def test_export_release_imports_no_dicom_ct_scipy_or_openai_library():
    code = (
        "import django, json, sys; django.setup();"
        "import annotations.management.commands.export_release;"
        "import annotations.services.releases.export;"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "clinreview.settings", "DEBUG": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []
