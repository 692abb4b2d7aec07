"""Combining every signal into one suspicion score per item."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from annotations.scoring.triage.types import Key, Reason, Suspect


def noisy_or(weights: Iterable[float]) -> float:
    """1 − Π(1 − w): independent pieces of evidence, each alone enough to make an item suspect.

    Unlike a sum it stays in [0, 1]; unlike a max, a second reason still raises the score.
    """
    return 1.0 - math.prod(1.0 - min(1.0, max(0.0, w)) for w in weights)


def combine(*signals: Mapping[Key, Reason | list[Reason]]) -> list[Suspect]:
    """One Suspect per item that has any reason, highest score first (ties by key)."""
    gathered: dict[Key, list[Reason]] = defaultdict(list)
    for signal in signals:
        for key, found in signal.items():
            gathered[key].extend(found if isinstance(found, list) else [found])
    suspects = [
        Suspect(key, noisy_or(r.weight for r in reasons), sorted(reasons, key=lambda r: -r.weight))
        for key, reasons in gathered.items()
    ]
    suspects.sort(key=lambda s: (-s.score, str(s.key)))
    return suspects
