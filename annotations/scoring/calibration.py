"""Confidence of a multiple-choice answer from token log-probabilities, and its calibration.

Confidence (`letter_confidence`): the probability of the answer's letter among the option letters
at the first generated token whose top log-probabilities hold an option letter, renormalised over
the option letters present there. A token counts as a letter when, stripped of white space and
of the punctuation models wrap letters in (`(A)`, `**A**`, `A.`), it is one of the options'
letters; tokens reading as the same letter add up (` A` and `A`). When the answer's letter is not
among the letters at that position its confidence is 0 (the model put its mass elsewhere). None
when there are no log-probabilities, no position holds a letter, or no letter was read.

Calibration (`calibration_group`): over the predictions that have a confidence,
- ECE with `bins` equal-width bins, a bin holding the confidences in (lo, hi] (the first bin also
  holds 0; scikit-learn's `calibration_curve` bins the same way): Σ n_b/N · |acc_b − conf_b|;
- Brier score of the answer's confidence: mean of (confidence − correct)²;
- mean confidence, accuracy, and their gap (mean confidence − accuracy: over-confidence > 0);
each with a percentile bootstrap interval over items (the draws of `scoring.bootstrap`).
`calibration_shift` compares clean, mild and severe on degraded/clean twins, resampling whole
families (a clean item with its twins) so that the pairing survives the bootstrap.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "METRICS",
    "CalibrationSettings",
    "brier_score",
    "calibration_by",
    "calibration_group",
    "calibration_shift",
    "confidence_of",
    "expected_calibration_error",
    "letter_confidence",
    "letter_distribution",
    "reliability_bins",
]

METRICS = ("ece", "brier", "mean_confidence", "accuracy", "gap")
LEVELS = ("clean", "mild", "severe")
_WRAPPING = " \t\n()[]{}*.:,;\"'`_"


@dataclass(frozen=True)
class CalibrationSettings:
    bins: int = 15
    resamples: int = 1000
    level: float = 0.95
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "bins": self.bins,
            "resamples": self.resamples,
            "level": self.level,
            "seed": self.seed,
        }


# --- confidence from log-probabilities ------------------------------------------------------


def _token_letter(token: Any, letters: Iterable[str]) -> str | None:
    if not isinstance(token, str):
        return None
    stripped = token.strip(_WRAPPING)
    return stripped if stripped in letters else None


def _logprob(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if not math.isnan(value) else None


def letter_distribution(
    content: Sequence[Mapping[str, Any]] | None, letters: Sequence[str]
) -> dict[str, float] | None:
    """The option letters' probabilities, renormalised over those present, at the first token
    of `content` whose top log-probabilities hold one; None when no token does.

    `content` is OpenAI's `choices[0].logprobs.content`: one entry per generated token with its
    `token`, `logprob` and `top_logprobs` (a list of `{token, logprob}`).
    """
    options = set(letters)
    for position in content or ():
        if not isinstance(position, Mapping):
            continue
        candidates = list(position.get("top_logprobs") or [])
        # The sampled token is in its own top list on every server we know; if not, it counts.
        candidates.append({"token": position.get("token"), "logprob": position.get("logprob")})
        seen: set[str] = set()
        mass: dict[str, float] = defaultdict(float)
        for candidate in candidates:
            if not isinstance(candidate, Mapping):
                continue
            token, logprob = candidate.get("token"), _logprob(candidate.get("logprob"))
            if not isinstance(token, str) or token in seen or logprob is None:
                continue
            seen.add(token)
            found = _token_letter(token, options)
            if found is not None:
                mass[found] += math.exp(logprob)
        total = sum(mass.values())
        if mass and total > 0:
            return {letter: mass[letter] / total for letter in sorted(mass)}
    return None


def confidence_of(distribution: Mapping[str, float] | None, letter: str) -> float | None:
    """The answer `letter`'s confidence from its position's distribution (0 when the letter
    is not in it); None without a distribution or a letter."""
    if not distribution or not letter:
        return None
    return float(distribution.get(letter, 0.0))


def letter_confidence(
    content: Sequence[Mapping[str, Any]] | None, letter: str, letters: Sequence[str]
) -> float | None:
    """The answer `letter`'s probability among `letters` (see the module docstring)."""
    if not letter or letter not in letters:
        return None
    return confidence_of(letter_distribution(content, letters), letter)


# --- calibration metrics --------------------------------------------------------------------


def bin_edges(bins: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, bins + 1)


def bin_ids(confidences: np.ndarray, bins: int) -> np.ndarray:
    """The bin of each confidence: (lo, hi], the first bin holding 0 too."""
    return np.searchsorted(bin_edges(bins)[1:-1], confidences, side="left")


Values = Sequence[float] | Sequence[bool] | np.ndarray


def _arrays(confidences: Values, correct: Values) -> tuple[np.ndarray, ...]:
    conf = np.asarray(confidences, dtype=np.float64)
    hits = np.asarray(correct, dtype=np.float64)
    if conf.shape != hits.shape or conf.ndim != 1:
        raise ValueError("one confidence and one correctness per prediction")
    if conf.size and (np.isnan(conf).any() or conf.min() < 0 or conf.max() > 1):
        raise ValueError("confidences must lie in [0, 1]")
    return conf, hits


def expected_calibration_error(confidences: Values, correct: Values, *, bins: int = 15) -> float:
    conf, hits = _arrays(confidences, correct)
    if not conf.size:
        return math.nan
    ids = bin_ids(conf, bins)
    gaps = np.bincount(ids, weights=hits - conf, minlength=bins)
    return float(np.abs(gaps).sum() / conf.size)


def brier_score(confidences: Values, correct: Values) -> float:
    conf, hits = _arrays(confidences, correct)
    return float(np.mean((conf - hits) ** 2)) if conf.size else math.nan


def reliability_bins(
    confidences: Values, correct: Values, *, bins: int = 15
) -> list[dict[str, Any]]:
    """The non-empty bins: `{lo, hi, n, accuracy, mean_confidence}`, low to high."""
    conf, hits = _arrays(confidences, correct)
    edges = bin_edges(bins)
    ids = bin_ids(conf, bins)
    counts = np.bincount(ids, minlength=bins)
    sum_conf = np.bincount(ids, weights=conf, minlength=bins)
    sum_hits = np.bincount(ids, weights=hits, minlength=bins)
    return [
        {
            "lo": round(float(edges[b]), 6),
            "hi": round(float(edges[b + 1]), 6),
            "n": int(counts[b]),
            "accuracy": float(sum_hits[b] / counts[b]),
            "mean_confidence": float(sum_conf[b] / counts[b]),
        }
        for b in range(bins)
        if counts[b]
    ]


def _metrics_of_draws(
    conf: np.ndarray, hits: np.ndarray, ids: np.ndarray, draws: np.ndarray, bins: int
) -> dict[str, np.ndarray]:
    """Every metric on each row of `draws` (resamples × n item indices), vectorised."""
    rows, n = draws.shape
    c, h = conf[draws], hits[draws]
    keys = (np.arange(rows)[:, None] * bins + ids[draws]).ravel()
    gaps = np.bincount(keys, weights=(h - c).ravel(), minlength=rows * bins).reshape(rows, bins)
    mean_conf, accuracy = c.mean(axis=1), h.mean(axis=1)
    return {
        "ece": np.abs(gaps).sum(axis=1) / n,
        "brier": ((c - h) ** 2).mean(axis=1),
        "mean_confidence": mean_conf,
        "accuracy": accuracy,
        "gap": mean_conf - accuracy,
    }


def _percentiles(samples: np.ndarray, level: float) -> list[float | None]:
    finite = samples[~np.isnan(samples)]
    if not finite.size:
        return [None, None]
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return [float(low), float(high)]


def _draw_chunks(n: int, settings: CalibrationSettings, chunk: int = 100) -> Iterable[np.ndarray]:
    rng = np.random.default_rng(settings.seed)
    left = settings.resamples
    while left > 0:
        size = min(chunk, left)
        left -= size
        yield rng.integers(0, n, size=(size, n))


def calibration_group(
    confidences: Values,
    correct: Values,
    settings: CalibrationSettings = CalibrationSettings(),
) -> dict[str, Any]:
    """`{n, ece, brier, mean_confidence, accuracy, gap, intervals: {metric: [lo, hi]}, bins}`;
    every metric None when there is no prediction with a confidence."""
    conf, hits = _arrays(confidences, correct)
    if not conf.size:
        return {"n": 0, **dict.fromkeys(METRICS), "intervals": {}, "bins": []}
    ids = bin_ids(conf, settings.bins)
    whole = _metrics_of_draws(conf, hits, ids, np.arange(conf.size)[None, :], settings.bins)
    parts = [
        _metrics_of_draws(conf, hits, ids, draws, settings.bins)
        for draws in _draw_chunks(conf.size, settings)
    ]
    intervals = {
        name: _percentiles(np.concatenate([p[name] for p in parts]), settings.level)
        for name in METRICS
    }
    return {
        "n": int(conf.size),
        **{name: float(whole[name][0]) for name in METRICS},
        "intervals": intervals,
        "bins": reliability_bins(conf, hits, bins=settings.bins),
    }


def calibration_by(
    records: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    settings: CalibrationSettings = CalibrationSettings(),
) -> dict[str, Any]:
    """Calibration overall and by each field's values, over `records` (`confidence`, `hit`, and
    the fields) that have a confidence; a record without a field's value is left out of it."""
    rated = [r for r in records if r.get("confidence") is not None]

    def group(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        return calibration_group(
            [float(r["confidence"]) for r in rows], [bool(r["hit"]) for r in rows], settings
        )

    by: dict[str, dict[str, Any]] = {}
    for name in fields:
        values: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for record in rated:
            if record.get(name):
                values[str(record[name])].append(record)
        if values:
            by[name] = {value: group(rows) for value, rows in sorted(values.items())}
    return {
        **settings.as_dict(),
        "n": len(records),
        "rated": len(rated),
        "overall": group(rated),
        "by": by,
    }


# --- calibration shift on twins -------------------------------------------------------------


def _twin_families(records: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Clean items with their degraded twins, each family's members that have a confidence
    (`item`, `clean_twin`, `severity`); families without a clean answer or a twin are dropped."""
    by_id = {r["item"]: r for r in records}
    families: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        clean = record.get("clean_twin")
        if clean is not None and clean in by_id and record.get("confidence") is not None:
            families[clean].append(record)
    return [
        [by_id[clean], *twins]
        for clean, twins in sorted(families.items(), key=lambda pair: str(pair[0]))
        if by_id[clean].get("confidence") is not None
    ]


def _weighted_metrics(
    weights: np.ndarray, conf: np.ndarray, hits: np.ndarray, ids: np.ndarray, bins: int
) -> dict[str, np.ndarray]:
    """Every metric under each row of `weights` (resamples × records: how many times each
    record was drawn); NaN where a row draws none."""
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = weights @ conf / total
        accuracy = weights @ hits / total
        in_bin = np.zeros((conf.size, bins))
        in_bin[np.arange(conf.size), ids] = hits - conf
        ece = np.abs(weights @ in_bin).sum(axis=1) / total
        brier = weights @ ((conf - hits) ** 2) / total
    return {
        "ece": ece,
        "brier": brier,
        "mean_confidence": mean_conf,
        "accuracy": accuracy,
        "gap": mean_conf - accuracy,
    }


def calibration_shift(
    records: Sequence[Mapping[str, Any]], settings: CalibrationSettings = CalibrationSettings()
) -> dict[str, Any] | None:
    """Each metric on clean, mild and severe twins, and its change clean→mild, mild→severe and
    clean→severe, on the families of twins whose answers have a confidence; intervals from
    resampling families (a family drawn k times weighs k). None without any twin."""
    families = _twin_families(records)
    if not families:
        return None
    members: dict[str, list[tuple[int, Mapping[str, Any]]]] = defaultdict(list)
    for number, family in enumerate(families):
        members["clean"].append((number, family[0]))
        for twin in family[1:]:
            members[str(twin.get("severity"))].append((number, twin))
    rng = np.random.default_rng(settings.seed)
    counts = np.stack(
        [
            np.bincount(rng.integers(0, len(families), len(families)), minlength=len(families))
            for _ in range(settings.resamples)
        ]
    ).astype(np.float64)
    whole: dict[str, dict[str, float]] = {}
    drawn: dict[str, dict[str, np.ndarray]] = {}
    for level in LEVELS:
        rows = members.get(level, [])
        family_of = np.array([number for number, _r in rows], dtype=np.int64)
        conf = np.array([float(r["confidence"]) for _n, r in rows])
        hits = np.array([float(bool(r["hit"])) for _n, r in rows])
        ids = bin_ids(conf, settings.bins)
        ones = np.ones((1, len(rows)))
        whole[level] = {
            m: float(v[0]) if len(rows) else math.nan
            for m, v in _weighted_metrics(ones, conf, hits, ids, settings.bins).items()
        }
        weights = counts[:, family_of] if len(rows) else np.zeros((settings.resamples, 0))
        drawn[level] = _weighted_metrics(weights, conf, hits, ids, settings.bins)

    def block(values: dict[str, float], samples: dict[str, np.ndarray]) -> dict[str, Any]:
        return {
            "value": {m: _number(values[m]) for m in METRICS},
            "intervals": {m: _percentiles(samples[m], settings.level) for m in METRICS},
        }

    steps = {}
    for earlier, later in (("clean", "mild"), ("mild", "severe"), ("clean", "severe")):
        change = {m: whole[later][m] - whole[earlier][m] for m in METRICS}
        samples = {m: drawn[later][m] - drawn[earlier][m] for m in METRICS}
        steps[f"{earlier}>{later}"] = block(change, samples)
    return {
        "families": len(families),
        "levels": {
            level: {"n": len(members.get(level, [])), **block(whole[level], drawn[level])}
            for level in LEVELS
        },
        "steps": steps,
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value
