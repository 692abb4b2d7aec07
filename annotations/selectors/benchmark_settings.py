"""A benchmark's settings history, newest first, for its settings page."""

from __future__ import annotations

from django.db.models import QuerySet

from annotations.models import Benchmark, BenchmarkRevision


def benchmark_revisions(benchmark: Benchmark) -> QuerySet[BenchmarkRevision]:
    return BenchmarkRevision.objects.filter(benchmark=benchmark).select_related("author")
