"""Baselines that answer without a model or a network: the floor every model must beat."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping

from annotations.inference.prompts import non_empty_options
from annotations.inference.types import Completion, InferenceItem

__all__ = [
    "BaselineProvider",
    "FirstOptionBaseline",
    "FrequentAnswerBaseline",
    "RandomBaseline",
]


class BaselineProvider(ABC):
    """A provider that picks an option letter itself; `answer` never fails nor waits."""

    name = "baseline"

    @abstractmethod
    def choose(self, item: InferenceItem) -> str:
        """The letter this baseline answers for `item` ("" when it has no option)."""

    def answer(self, item: InferenceItem) -> Completion:
        """The baseline's answer as a Completion (no tokens, no latency, one attempt)."""
        return Completion(text=self.choose(item), latency_ms=0.0, attempts=1)


class RandomBaseline(BaselineProvider):
    """A uniformly random option, the same for a given (seed, item key) in every process."""

    name = "random"

    def __init__(self, seed: int | str = 0) -> None:
        self.seed = seed

    def choose(self, item: InferenceItem) -> str:
        letters = list(non_empty_options(item.options))
        if not letters:
            return ""
        # A string seed is hashed with SHA-512 by `random`, so it is stable across processes
        # (unlike hash()), which keeps a re-run or a resumed run identical.
        return random.Random(f"{self.seed}:{item.key}").choice(letters)


class FirstOptionBaseline(BaselineProvider):
    """Always the first non-empty option: exposes answer-position bias in a benchmark."""

    name = "first_option"

    def choose(self, item: InferenceItem) -> str:
        return next(iter(non_empty_options(item.options)), "")


class FrequentAnswerBaseline(BaselineProvider):
    """The most frequent gold letter of the item's category (ties go to the earliest letter).

    Letters the item does not offer are ignored; an unseen category falls back to the counts
    pooled over all categories, and no counts at all to the first option.
    """

    name = "frequent_answer"

    def __init__(self, counts_by_category: Mapping[str, Counter[str]]) -> None:
        self.counts_by_category = {key: Counter(value) for key, value in counts_by_category.items()}
        self.pooled: Counter[str] = sum(self.counts_by_category.values(), Counter())

    def choose(self, item: InferenceItem) -> str:
        letters = list(non_empty_options(item.options))
        if not letters:
            return ""
        counts = self.counts_by_category.get(item.category) or self.pooled
        # max() keeps the first of equal keys and letters are sorted: ties go to the earliest.
        best = max(letters, key=lambda letter: counts.get(letter, 0))
        return best if counts.get(best, 0) > 0 else letters[0]
