"""The layering rules in .importlinter hold for the code, and each one catches a planted leak.

The packages are copied once into a temporary folder, where every contract is first shown kept;
then each test adds one module that breaks one rule, runs `lint-imports` there limited to that
rule (the rule must report it) and removes its module again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("annotations", "demo")

# contract id -> (module path of the plant, its source)
PLANTS = {
    "pure-cores": ("annotations/scoring/_planted.py", "from annotations.models import Item\n"),
    "imaging-below-formats": (
        "annotations/imaging/_planted.py",
        "from annotations.formats import taxonomy\n",
    ),
    "layers": ("annotations/models/_planted.py", "from annotations.services import review\n"),
    "selectors-read-only": (
        "annotations/selectors/_planted.py",
        "from annotations.services.review import review_submit\n",
    ),
    "tasks-through-services": (
        "annotations/views/_planted.py",
        "from annotations.tasks.degrade import benchmark_degrade_task\n",
    ),
    "services-below-tasks": (
        "annotations/services/_planted.py",
        "from annotations.tasks.runs import run_chunk_execute\n",
    ),
    "releases-own-columns": (
        "annotations/services/releases/_planted.py",
        "from annotations.services.imports import CORE_COLUMNS\n",
    ),
}


def _lint(folder: Path, *contracts: str) -> subprocess.CompletedProcess:
    args = [str(LINT_IMPORTS), "--config", str(folder / ".importlinter"), "--no-cache"]
    for contract in contracts:
        args += ["--contract", contract]
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def unplanted_copy(tmp_path_factory) -> Path:
    """One copy of the packages for every plant (each test removes its own), on which every
    contract is kept: so a failure below comes from the plant and not from the copy."""
    folder = tmp_path_factory.mktemp("architecture")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, folder / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / ".importlinter", folder / ".importlinter")
    kept = _lint(folder)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    return folder


def test_the_code_keeps_every_contract():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_contract_has_a_planted_violation():
    config = (ROOT / ".importlinter").read_text()
    ids = {line.split(":")[2].rstrip("]") for line in config.splitlines() if ":contract:" in line}
    assert ids == set(PLANTS)


@pytest.mark.parametrize("contract", sorted(PLANTS))
def test_the_contract_catches_a_planted_violation(unplanted_copy, contract):
    path, source = PLANTS[contract]
    plant = unplanted_copy / path
    plant.write_text(source)
    try:
        broken = _lint(unplanted_copy, contract)
    finally:
        plant.unlink()

    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "BROKEN" in broken.stdout
    assert "_planted" in broken.stdout
