"""Cliff effects: accuracy that holds at mild degradation and collapses at severe, found on twins.

A *triple* is a clean item with its mild and its severe twin of one degradation type (the first
of each, by item id, when a type has several seeds), all three answered. Per degradation type,
and per type × modality where the cell has at least `min_twins` triples, the accuracies clean →
mild → severe are taken on the same triples, and each step is tested with McNemar's exact test on
its discordant pairs (b: right before, wrong after; c: wrong before, right after; two-sided
p = min(1, 2 · P[Binomial(b + c, ½) ≤ min(b, c)]), as statsmodels' `mcnemar(exact=True)`).

A **cliff** is a severe step whose drop (accuracy before − after) is at least `ratio` times the
mild step's drop, at least `min_drop`, and significant (p < `alpha`). The rule's thresholds are
written with the rows so a reader knows what was called a cliff.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "CliffRule",
    "Triple",
    "capability_robustness",
    "find_cliffs",
    "mcnemar_exact",
    "twin_triples",
]


@dataclass(frozen=True)
class CliffRule:
    ratio: float = 2.0
    min_drop: float = 0.10
    alpha: float = 0.05
    min_twins: int = 20

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts `b` and `c`."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


@dataclass(frozen=True)
class Triple:
    """A clean item's answer and its mild and severe twins' answers for one degradation type."""

    degradation_type: str
    modality: str
    clean: Mapping[str, Any]
    mild: Mapping[str, Any]
    severe: Mapping[str, Any]


def twin_triples(records: Sequence[Mapping[str, Any]]) -> list[Triple]:
    """Every (clean, mild, severe) triple of the answered `records` (`item`, `clean_twin`,
    `severity`, `degradation_type`, `modality`, `hit`), by degradation type then clean item."""
    by_id = {r["item"]: r for r in records}
    twins: dict[tuple[str, Any], dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for record in sorted(records, key=lambda r: _order(r["item"])):
        clean = record.get("clean_twin")
        severity = record.get("severity")
        if clean is None or clean not in by_id or severity not in ("mild", "severe"):
            continue
        twins[(str(record.get("degradation_type") or ""), clean)].setdefault(severity, record)
    triples = []
    for (kind, clean), pair in sorted(twins.items(), key=lambda e: (e[0][0], _order(e[0][1]))):
        if "mild" in pair and "severe" in pair:
            modality = str(by_id[clean].get("modality") or pair["mild"].get("modality") or "")
            triples.append(Triple(kind, modality, by_id[clean], pair["mild"], pair["severe"]))
    return triples


def _order(key: Any) -> tuple[int, Any]:
    """Item ids in number order (any other key after, as text)."""
    return (0, key) if isinstance(key, int) else (1, str(key))


def _hit(record: Mapping[str, Any]) -> bool:
    return record.get("hit") is True


def _step(before: list[bool], after: list[bool]) -> tuple[float, float]:
    """(drop, McNemar p) from `before` to `after` on the same items."""
    b = sum(1 for x, y in zip(before, after, strict=True) if x and not y)
    c = sum(1 for x, y in zip(before, after, strict=True) if y and not x)
    n = len(before)
    return (sum(before) - sum(after)) / n, mcnemar_exact(b, c)


def _row(kind: str, modality: str | None, triples: list[Triple], rule: CliffRule) -> dict:
    clean = [_hit(t.clean) for t in triples]
    mild = [_hit(t.mild) for t in triples]
    severe = [_hit(t.severe) for t in triples]
    n = len(triples)
    drop_mild, p_mild = _step(clean, mild)
    drop_severe, p_severe = _step(mild, severe)
    cliff = (
        drop_severe >= rule.ratio * drop_mild
        and drop_severe >= rule.min_drop
        and p_severe < rule.alpha
    )
    return {
        "degradation_type": kind,
        "modality": modality,
        "n": n,
        "accuracy_clean": sum(clean) / n,
        "accuracy_mild": sum(mild) / n,
        "accuracy_severe": sum(severe) / n,
        "drop_mild": drop_mild,
        "drop_severe": drop_severe,
        "p_mild": p_mild,
        "p_severe": p_severe,
        "cliff": bool(cliff),
    }


def find_cliffs(records: Sequence[Mapping[str, Any]], rule: CliffRule = CliffRule()) -> dict:
    """`{"rule": {...}, "rows": [...]}`: one row per degradation type (modality None) and per
    type × modality cell with at least `rule.min_twins` triples, sorted by the severe step's
    drop, largest first (a tie: type, then the type's own row first)."""
    triples = twin_triples(records)
    by_type: dict[str, list[Triple]] = defaultdict(list)
    by_cell: dict[tuple[str, str], list[Triple]] = defaultdict(list)
    for triple in triples:
        by_type[triple.degradation_type].append(triple)
        by_cell[(triple.degradation_type, triple.modality)].append(triple)
    rows = [_row(kind, None, found, rule) for kind, found in by_type.items()]
    rows += [
        _row(kind, modality, found, rule)
        for (kind, modality), found in by_cell.items()
        if len(found) >= rule.min_twins
    ]
    rows.sort(key=lambda r: (-r["drop_severe"], r["degradation_type"], r["modality"] or ""))
    return {"rule": rule.as_dict(), "rows": rows}


def capability_robustness(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per capability and degradation type: accuracy of the degraded twins, of their clean items
    (paired), and the drop, for mild and severe; which capability loses most where."""
    by_id = {r["item"]: r for r in records}
    cells: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for record in records:
        clean = by_id.get(record.get("clean_twin"))
        severity = record.get("severity")
        capability = record.get("capability") or (clean or {}).get("capability")
        if clean is None or not capability or severity not in ("mild", "severe"):
            continue
        kind = str(record.get("degradation_type") or "")
        cells[(str(capability), kind, str(severity))].append((_hit(clean), _hit(record)))
    rows = []
    for (capability, kind, severity), pairs in sorted(cells.items()):
        n = len(pairs)
        clean_acc = sum(c for c, _d in pairs) / n
        degraded_acc = sum(d for _c, d in pairs) / n
        rows.append(
            {
                "capability": capability,
                "degradation_type": kind,
                "severity": severity,
                "n": n,
                "accuracy_clean": clean_acc,
                "accuracy_degraded": degraded_acc,
                "drop": clean_acc - degraded_acc,
            }
        )
    return rows
