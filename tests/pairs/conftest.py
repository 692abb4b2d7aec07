from __future__ import annotations

import pytest

from annotations.models import Item
from annotations.services.degrade import benchmark_degrade
from annotations.services.review import assignments_create
from tests.factories import make_personas
from tests.pairs.helpers import make_pair_benchmark


@pytest.fixture
def people(db):
    return make_personas()


@pytest.fixture
def paired(people):
    """A benchmark with 2 clean items and 4 degraded twins, all assigned to both reviewers."""
    benchmark = make_pair_benchmark()
    benchmark_degrade(benchmark=benchmark, kinds="gaussian_blur", severities="mild,severe", seed=0)
    assignments_create(
        benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]], per_item=2
    )
    twins = list(Item.objects.filter(clean_twin__isnull=False).order_by("source_index"))
    return benchmark, twins
