"""Inter-reviewer agreement on verdicts (accept / edit / reject), per benchmark and taxonomy value.

A unit is one version of one item reviewed by at least two reviewers. Percent agreement counts
the pairs of reviewers of a unit who gave the same verdict; Cohen's kappa is computed for every
pair of reviewers over the units they both reviewed; Krippendorff's alpha (nominal) over all
units, whatever the number of reviewers. Fewer than MIN_UNITS units gets a warning: a kappa over
a handful of items says little.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from annotations.models import TAXONOMY_FIELDS, Benchmark
from annotations.scoring.agreement import (
    cohen_kappa,
    krippendorff_alpha_nominal,
    percent_agreement,
)
from annotations.selectors.review import ReviewLabel, agreement_labels

MIN_UNITS = 20


@dataclass(frozen=True)
class AgreementStats:
    n: int
    percent: float
    alpha: float

    @property
    def warning(self) -> bool:
        return self.n < MIN_UNITS


@dataclass(frozen=True)
class PairKappa:
    reviewer_a: str
    reviewer_b: str
    n: int
    percent: float
    kappa: float

    @property
    def warning(self) -> bool:
        return self.n < MIN_UNITS


@dataclass
class AgreementReport:
    benchmark: str
    overall: AgreementStats
    pairs: list[PairKappa] = field(default_factory=list)
    by_field: dict[str, dict[str, AgreementStats]] = field(default_factory=dict)


Unit = dict[str, str]  # reviewer username → verdict


def _units(labels: list[ReviewLabel]) -> dict[tuple[int, int], Unit]:
    units: dict[tuple[int, int], Unit] = defaultdict(dict)
    for label in labels:
        units[label.item_id, label.item_version][label.reviewer] = label.verdict
    return {key: unit for key, unit in units.items() if len(unit) >= 2}


def stats_of(units: list[Unit]) -> AgreementStats:
    """Percent agreement over reviewer pairs and Krippendorff's alpha over these units."""
    pairs = [(unit[a], unit[b]) for unit in units for a, b in combinations(sorted(unit), 2)]
    alpha_units = {index: list(unit.values()) for index, unit in enumerate(units)}
    return AgreementStats(
        n=len(units),
        percent=percent_agreement(pairs),
        alpha=krippendorff_alpha_nominal(alpha_units),
    )


def pair_kappas(units: list[Unit]) -> list[PairKappa]:
    """Cohen's kappa for every pair of reviewers who reviewed a unit together."""
    shared: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for unit in units:
        for a, b in combinations(sorted(unit), 2):
            shared[a, b].append((unit[a], unit[b]))
    return [
        PairKappa(
            reviewer_a=a,
            reviewer_b=b,
            n=len(rows),
            percent=percent_agreement(rows),
            kappa=cohen_kappa([x for x, _ in rows], [y for _, y in rows]),
        )
        for (a, b), rows in sorted(shared.items())
    ]


def benchmark_agreement(*, benchmark: Benchmark, viewer=None) -> AgreementReport:
    """Agreement overall, per reviewer pair and per value of every taxonomy field in use (for
    `viewer`: without the items they are reviewing, see selectors.visibility)."""
    labels = agreement_labels(benchmark, viewer=viewer)
    units = _units(labels)
    taxonomy = {(label.item_id, label.item_version): label.taxonomy for label in labels}
    by_field: dict[str, dict[str, list[Unit]]] = defaultdict(lambda: defaultdict(list))
    for key, unit in units.items():
        for name, value in taxonomy[key].items():
            by_field[name][value].append(unit)
    return AgreementReport(
        benchmark=benchmark.name,
        overall=stats_of(list(units.values())),
        pairs=pair_kappas(list(units.values())),
        by_field={
            name: {value: stats_of(group) for value, group in sorted(values.items())}
            for name in TAXONOMY_FIELDS
            if (values := by_field.get(name))
        },
    )


def finite(value: float) -> float | None:
    """NaN (undefined statistic) as None, for JSON and templates."""
    return None if value is None or math.isnan(value) else value
