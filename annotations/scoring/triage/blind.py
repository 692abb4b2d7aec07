"""Answerable without the image: runs that were not shown the image and still answer right.

One lucky guess proves little (a 4-option item is guessed a quarter of the time), so the item
weight grows with the number of blind runs that got it right, and doubles when its whole task
is answered above chance without images: the Wilson lower bound of the task's blind accuracy
sits above the chance level (and the accuracy is clearly above it), so the task's questions can be solved from text alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from annotations.scoring.accuracy import wilson_interval
from annotations.scoring.triage.consensus import RunVotes
from annotations.scoring.triage.types import ANSWERABLE_WITHOUT_IMAGE, Key, Reason

# Small on purpose: a question answerable from its text is uninformative, not wrong, and a
# blind run agreeing with the gold even speaks for the gold. It must not push likely-wrong
# answers down the review queue; the triage page filters on it for the benchmark's designers.
ITEM_WEIGHT = 0.02
TASK_BONUS = 0.06
# A benchmark has a dozen tasks or more: a 99% interval and a practical margin keep a task from
# being flagged by the luck of one blind run.
Z = 2.576
MARGIN = 0.1


@dataclass(frozen=True)
class TaskBlindness:
    """How well the blind runs did on one task, against the chance level."""

    task: str
    n: int
    hits: int
    chance: float
    low: float
    high: float

    @property
    def accuracy(self) -> float:
        return self.hits / self.n if self.n else 0.0

    @property
    def flagged(self) -> bool:
        return self.n > 0 and self.low > self.chance and self.accuracy >= self.chance + MARGIN

    def as_json(self) -> dict:
        return {
            "task": self.task,
            "n": self.n,
            "hits": self.hits,
            "accuracy": round(self.accuracy, 4),
            "chance": round(self.chance, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "flagged": self.flagged,
        }


def task_blindness(
    gold: Mapping[Key, str],
    letters: Mapping[Key, list[str]],
    tasks: Mapping[Key, str],
    runs: list[RunVotes],
) -> dict[str, TaskBlindness]:
    """Blind accuracy per task (all blind runs pooled) with its 95% Wilson interval."""
    counts: dict[str, list[float]] = {}
    for run in runs:
        for key, letter in run.answers.items():
            if key not in gold:
                continue
            row = counts.setdefault(tasks.get(key, ""), [0, 0, 0.0])
            row[0] += 1
            row[1] += letter == gold[key]
            row[2] += 1.0 / max(2, len(letters.get(key) or ()))
    result = {}
    for task, (n, hits, chance_sum) in counts.items():
        low, high = wilson_interval(int(hits), int(n), z=Z)
        result[task] = TaskBlindness(task, int(n), int(hits), chance_sum / n, low, high)
    return result


def answerable_without_image(
    gold: Mapping[Key, str],
    letters: Mapping[Key, list[str]],
    tasks: Mapping[Key, str],
    runs: list[RunVotes],
) -> tuple[dict[Key, Reason], dict[str, TaskBlindness]]:
    """Items every blind run (at least one) answered correctly, and the per-task picture."""
    by_task = task_blindness(gold, letters, tasks, runs)
    result: dict[Key, Reason] = {}
    for key, answer in gold.items():
        answers = [(run.label, run.answers[key]) for run in runs if key in run.answers]
        if not answers or any(letter != answer for _label, letter in answers):
            continue
        k = max(2, len(letters.get(key) or ()))
        luck = (1.0 / k) ** len(answers)  # chance that every blind run guessed it
        blind = by_task.get(tasks.get(key, ""))
        weight = ITEM_WEIGHT * (1.0 - luck) + (TASK_BONUS if blind and blind.flagged else 0.0)
        result[key] = _reason(answer, answers, blind, weight)
    return result, by_task


def _reason(
    answer: str, answers: list[tuple[str, str]], blind: TaskBlindness | None, weight: float
) -> Reason:
    task_part = ""
    evidence: dict = {
        "gold": answer,
        "runs": [{"run": label, "answer": letter} for label, letter in answers],
    }
    if blind is not None:
        evidence["task"] = blind.as_json()
        if blind.flagged:
            task_part = (
                f" The whole task {blind.task or '(none)'} is answered {blind.accuracy:.0%} "
                f"without images (chance {blind.chance:.0%})."
            )
    return Reason(
        ANSWERABLE_WITHOUT_IMAGE,
        weight,
        f"{len(answers)} of {len(answers)} runs without the image answer correctly." + task_part,
        evidence,
    )
