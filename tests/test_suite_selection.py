"""`make integration` leaves out only the database-free tests of the pure cores (tests/conftest.py):
a test that asks for a database, or lies elsewhere, still runs on PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from django.test import SimpleTestCase, TestCase

from tests.conftest import is_database_free

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Collected:
    """What the selection reads of a collected test."""

    path: Path
    fixturenames: list[str] = field(default_factory=list)
    cls: type | None = None
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name):
        return name if name in self.markers else None


def test_a_pure_core_test_without_a_database_is_left_out():
    assert is_database_free(Collected(ROOT / "tests/formats/test_vlmeval.py"), ROOT)
    assert is_database_free(Collected(ROOT / "tests/test_charts.py"), ROOT)
    simple = Collected(ROOT / "tests/scoring/test_x.py", cls=SimpleTestCase)
    assert is_database_free(simple, ROOT)


def test_a_test_that_asks_for_a_database_still_runs():
    for collected in (
        Collected(ROOT / "tests/scoring/test_x.py", fixturenames=["request", "db"]),
        Collected(ROOT / "tests/imaging/test_x.py", markers=("django_db",)),
        Collected(ROOT / "tests/scoring/test_x.py", cls=TestCase),
        Collected(ROOT / "tests/inference/test_x.py", fixturenames=["live_server"]),
    ):
        assert not is_database_free(collected, ROOT)


def test_a_test_outside_the_pure_cores_still_runs():
    assert not is_database_free(Collected(ROOT / "tests/core/test_pages.py"), ROOT)
    assert not is_database_free(Collected(ROOT / "tests/formats_more/test_x.py"), ROOT)
