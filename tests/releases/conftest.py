from __future__ import annotations

import pytest

from annotations.services.releases import release_build, release_create
from annotations.tasks import releases as release_tasks
from tests.factories import make_personas
from tests.releases.helpers import endo_benchmark


@pytest.fixture
def people(db):
    return make_personas()


@pytest.fixture
def benchmark(people):
    return endo_benchmark(people)


@pytest.fixture
def published(benchmark, people):
    """A published release of the endo benchmark."""
    release = release_create(
        benchmark=benchmark, name="EndoRelease", version="1.0", user=people["curator"]
    )
    return release_build(release=release)


@pytest.fixture
def queued(monkeypatch):
    """Release builds sent to the worker, recorded instead of sent to the broker."""
    sent: list[int] = []
    monkeypatch.setattr(release_tasks.release_build_task, "delay", sent.append)
    return sent
