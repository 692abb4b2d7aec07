"""A web process and a management command start light: the heavy science (and Celery) is loaded
where it is used, not by the URL configuration or by Django's start-up.

Each case starts a fresh interpreter, because this test process has long loaded everything.
bench/startup.py measures the time and memory this saves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each costs a large part of a second or more at start, and no page needs it to be served.
HEAVY = ("scipy", "skimage", "SimpleITK", "pydicom", "openai", "imagehash", "celery")

_REPORT = "import json, sys; print(json.dumps(sorted(m for m in sys.modules if '.' not in m)))"

WEB_WORKER = f"""
from clinreview.wsgi import application
from django.urls import get_resolver

def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))

walk(get_resolver().url_patterns)  # every include() resolved, as the first request does
{_REPORT}
"""

COMMAND = f"""
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", "check"])
{_REPORT}
"""


def _top_level_modules(source: str) -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "clinreview.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", source],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("process", ["web worker", "manage.py check"])
def test_start_up_loads_no_heavy_science(process):
    loaded = _top_level_modules(WEB_WORKER if process == "web worker" else COMMAND)

    assert "django" in loaded and "annotations" in loaded  # the probe did start the app
    assert sorted(loaded & set(HEAVY)) == []


def test_the_probe_sees_a_heavy_module_loaded_at_start():
    # The same probe, on a process that does load one: the check above can fail.
    loaded = _top_level_modules("import annotations.imaging.dicom\n" + COMMAND)
    assert {"SimpleITK", "pydicom"} <= loaded
