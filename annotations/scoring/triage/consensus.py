"""Model consensus against the gold answer, the confident-learning way.

Each run is a noisy annotator whose reliability is its accuracy against the gold answers of the
*other* items (leave-one-out, so an item's own possibly-wrong gold does not vouch for the runs
judging it). Under a symmetric-noise model (a run is right with probability a, else picks one of
the other K-1 letters uniformly) the votes give a posterior over the true letter; the suspicion
is the posterior probability that the gold letter is not the true one. Runs no better than
chance carry no weight. The prior rate of wrong gold answers is estimated from the benchmark
itself by a few EM steps, as confident learning estimates its noise matrix.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from annotations.scoring.triage.types import MODEL_CONSENSUS, Key, Reason

RunKey = Hashable


@dataclass(frozen=True)
class RunVotes:
    """One run's extracted answers: item key -> letter ('' when no letter could be read)."""

    key: RunKey
    label: str
    answers: Mapping[Key, str]


@dataclass(frozen=True)
class _Vote:
    run: RunVotes
    letter: str
    accuracy: float


def run_hits(run: RunVotes, gold: Mapping[Key, str]) -> tuple[int, int]:
    """(hits, answered) of a run against the gold letters (an unreadable answer counts wrong)."""
    hits = answered = 0
    for key, letter in run.answers.items():
        if key in gold:
            answered += 1
            hits += letter == gold[key]
    return hits, answered


def loo_accuracy(hits: int, answered: int, own_hit: bool) -> float:
    """Accuracy on every other item, with a Laplace (add-one) correction for small runs."""
    rest_hits = hits - int(own_hit)
    rest_n = answered - 1
    return (rest_hits + 1) / (rest_n + 2)


def _votes(
    key: Key, gold: str, runs: list[RunVotes], totals: dict[RunKey, tuple[int, int]], k: int
) -> list[_Vote]:
    chance = 1.0 / k
    votes = []
    for run in runs:
        letter = run.answers.get(key)
        if letter is None:
            continue
        hits, answered = totals[run.key]
        accuracy = min(0.99, loo_accuracy(hits, answered, letter == gold))
        if accuracy <= chance + 0.02 or not letter:
            continue  # no better than guessing, or no letter to count
        votes.append(_Vote(run, letter, accuracy))
    return votes


def posterior_wrong(
    gold: str, letters: list[str], votes: list[_Vote], prior_wrong: float
) -> tuple[float, str]:
    """(P(gold is not the true letter | votes), the most likely other letter)."""
    k = len(letters)
    logs: dict[str, float] = {}
    for candidate in letters:
        prior = 1.0 - prior_wrong if candidate == gold else prior_wrong / (k - 1)
        total = math.log(prior)
        for vote in votes:
            right = vote.letter == candidate
            total += math.log(vote.accuracy if right else (1.0 - vote.accuracy) / (k - 1))
        logs[candidate] = total
    top = max(logs.values())
    weights = {letter: math.exp(value - top) for letter, value in logs.items()}
    norm = sum(weights.values())
    alternative = max((letter for letter in letters if letter != gold), key=lambda x: weights[x])
    return 1.0 - weights[gold] / norm, alternative


def model_consensus(
    gold: Mapping[Key, str],
    letters: Mapping[Key, list[str]],
    runs: list[RunVotes],
    *,
    min_weight: float = 0.05,
    em_steps: int = 3,
) -> dict[Key, Reason]:
    """Items whose gold letter the runs, weighted by their leave-one-out accuracy, contradict.

    `letters` gives each item's usable option letters; items whose gold is not among them are
    skipped (the broken-item check reports those). The reason's weight is the posterior
    probability that the gold answer is wrong.
    """
    totals = {run.key: run_hits(run, gold) for run in runs}
    prepared = []
    for key, answer in gold.items():
        options = letters.get(key) or []
        if answer not in options or len(options) < 2:
            continue
        votes = [v for v in _votes(key, answer, runs, totals, len(options)) if v.letter in options]
        if votes:
            prepared.append((key, answer, options, votes))
    prior = 0.1
    for _step in range(em_steps):
        if not prepared:
            break
        mean = sum(posterior_wrong(g, o, v, prior)[0] for _k, g, o, v in prepared) / len(gold)
        prior = min(0.5, max(0.005, mean))
    result: dict[Key, Reason] = {}
    for key, answer, options, votes in prepared:
        p_wrong, alternative = posterior_wrong(answer, options, votes, prior)
        agree = [vote for vote in votes if vote.letter == alternative]
        if p_wrong < min_weight or not agree:
            continue
        result[key] = _reason(answer, alternative, votes, agree, p_wrong, prior)
    return result


def _reason(
    gold: str, alternative: str, votes: list[_Vote], agree: list[_Vote], p: float, prior: float
) -> Reason:
    return Reason(
        MODEL_CONSENSUS,
        p,
        f"{len(agree)} of {len(votes)} models answer {alternative} instead of the gold "
        f"{gold}; weighted by each model's accuracy on the other items, the gold answer is "
        f"wrong with probability {p:.0%}.",
        {
            "gold": gold,
            "consensus": alternative,
            "agree": len(agree),
            "runs": len(votes),
            "probability": round(p, 4),
            "prior": round(prior, 4),
            "votes": [
                {"run": vote.run.label, "answer": vote.letter, "accuracy": round(vote.accuracy, 3)}
                for vote in votes
            ],
        },
    )
