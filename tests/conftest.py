from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing(request):
    """Tests log in many personas; the production hasher would make each take about a second.

    Set once here for every test (Django or browser), so no test module needs its own.
    """
    if not request.config.pluginmanager.hasplugin("django"):
        return
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# Tests of code that imports no Django (the pure cores) and checks of the tree itself. `make
# integration` runs the suite again on PostgreSQL and Redis; there these tests would only repeat
# what `make test` showed, since no database can change their outcome.
DATABASE_FREE_PATHS = (
    "tests/formats",
    "tests/imaging",
    "tests/scoring",
    "tests/inference",
    "tests/test_charts.py",
    "tests/test_architecture.py",
    "tests/test_docs.py",
)
# (django_db_blocker is not one: pytest-django gives it to every test.)
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_setup", "live_server"})


def pytest_addoption(parser):
    parser.addoption(
        "--skip-database-free",
        action="store_true",
        help="leave out the tests under DATABASE_FREE_PATHS that use no database (make integration)",
    )


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--skip-database-free"):
        return
    root = Path(config.rootpath)
    dropped = [item for item in items if is_database_free(item, root)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in set(dropped)]


def is_database_free(item, root: Path) -> bool:
    """Whether a collected test lies under DATABASE_FREE_PATHS and asks for no database."""
    path = Path(item.path).resolve().relative_to(root.resolve()).as_posix()
    if not any(path == base or path.startswith(f"{base}/") for base in DATABASE_FREE_PATHS):
        return False
    if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames):
        return False
    test_class = getattr(item, "cls", None)
    if test_class is not None:
        from django.test import TransactionTestCase

        return not issubclass(test_class, TransactionTestCase)
    return True
