from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from annotations.models import Case
from annotations.selectors.cases import memmaps
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.cases.builders import SMALL_GEOMETRY, write_case
from tests.factories import make_personas


def media_files() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


@pytest.fixture(autouse=True)
def _fresh_media(settings, tmp_path_factory):
    # A MEDIA_ROOT per test, so "nothing stored" can be checked by listing it; and never a
    # memmap opened by a previous test.
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    memmaps.clear()
    yield
    memmaps.clear()


@pytest.fixture
def people(db):
    return make_personas()


@pytest.fixture
def imported(tmp_path, people):
    """A benchmark 'gx' with one case of four awkward-geometry phases; returns the Case."""
    write_case(tmp_path / "cases", "GX-T-0001")
    benchmark = gastricx_import(path=tmp_path / "cases", name="gx", user=people["curator"])
    # Its questions go to the two reviewers: the case is in their scope (selectors.visibility).
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return Case.objects.get(case_id="GX-T-0001")


@pytest.fixture
def small_case(tmp_path, people):
    """Three small phases (arterial, venous, delayed) in benchmark 'gxs', its questions given to
    the two reviewers (boxes are drawn by a case's reviewers); returns the Case."""
    write_case(tmp_path / "small", "GX-S-0001", phases=SMALL_GEOMETRY)
    benchmark = gastricx_import(path=tmp_path / "small", name="gxs", user=people["curator"])
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return Case.objects.get(case_id="GX-S-0001")
