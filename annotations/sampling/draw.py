"""A stratified random draw from a pool: exact quotas per stratum, reproducible from a seed.

Every candidate gets a rank from its own key and the seed (splitmix64), so a stratum's order
does not depend on which other candidates exist: a draw and its later top-ups walk the same
order, and a top-up simply goes on past the items drawn before. Questions are compared on the
same image only: an exact or (optionally) near-identical question on an image already drawn is
passed over, so no two drawn items ask the same thing of the same picture.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

Stratum = tuple[str, ...]
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Candidate:
    """A pool item as the draw sees it."""

    key: int  # the pool item's id: stable, so that ranks are too
    stratum: Stratum
    images: tuple[Hashable, ...]
    question: str


@dataclass
class DrawOutcome:
    """Per stratum the keys drawn (in draw order), and what was passed over and why."""

    chosen: dict[Stratum, list[int]] = field(default_factory=dict)
    exhausted: set[Stratum] = field(default_factory=set)
    duplicates_skipped: int = 0
    near_duplicates_skipped: int = 0

    @property
    def keys(self) -> list[int]:
        return [key for keys in self.chosen.values() for key in keys]


def ranks(keys: Sequence[int], seed: int) -> np.ndarray:
    """splitmix64(seed, key) for each key: a seeded pseudo-random order that is a function of
    the key alone."""
    with np.errstate(over="ignore"):
        x = np.asarray(keys, dtype=np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) & _MASK)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def question_key(text: str) -> str:
    """A question as compared for exact duplicates: its words, case and punctuation aside."""
    # Imported here: the triage's package loads imagehash (and scipy), which a web process
    # should not pay for at start-up.
    from annotations.scoring.triage.duplicates import question_tokens

    return " ".join(question_tokens(text))


def near_duplicate(question: str, others: Iterable[str]) -> bool:
    """Whether `question` reads as one of `others` (the triage's near-question rule)."""
    from annotations.scoring.triage.duplicates import near_question_pairs

    texts: dict[Hashable, str] = {0: question, **dict(enumerate(others, start=1))}
    return any(0 in (a, b) for a, b, _ in near_question_pairs(texts))


class _Seen:
    """Questions already drawn, by image."""

    def __init__(self, near: bool) -> None:
        self._near = near
        self._exact: set[tuple[Hashable, str]] = set()
        self._texts: dict[Hashable, list[str]] = defaultdict(list)

    def add(self, candidate: Candidate) -> None:
        text = question_key(candidate.question)
        for image in candidate.images:
            self._exact.add((image, text))
            self._texts[image].append(candidate.question)

    def clash(self, candidate: Candidate) -> str:
        """'' when the candidate may be drawn; else 'duplicate' or 'near_duplicate'."""
        text = question_key(candidate.question)
        if any((image, text) in self._exact for image in candidate.images):
            return "duplicate"
        if self._near:
            for image in candidate.images:
                if self._texts[image] and near_duplicate(candidate.question, self._texts[image]):
                    return "near_duplicate"
        return ""


def draw(
    members: Mapping[Stratum, Sequence[int]],
    quotas: Mapping[Stratum, int],
    seed: int,
    lookup: Callable[[Sequence[int]], Mapping[int, Candidate]],
    *,
    drawn_before: Iterable[Candidate] = (),
    have: Mapping[Stratum, int] | None = None,
    near_duplicates: bool = False,
) -> DrawOutcome:
    """Draw up to `quotas[s] - have[s]` of the keys `members[s]` of each stratum s, in seeded
    rank order; `lookup(keys)` gives their images and questions (only the keys walked are
    looked up, a batch at a time, so a draw reads the questions of a few more items than it
    draws, not of the whole pool).

    `drawn_before` are the candidates of earlier rounds (never drawn again, and their questions
    count as drawn); `have` how many of each stratum still stand (a top-up fills the rest).
    A stratum whose candidates run out is listed in `exhausted`.
    """
    have = have or {}
    before = {candidate.key for candidate in drawn_before}
    seen = _Seen(near_duplicates)
    for candidate in drawn_before:
        seen.add(candidate)
    outcome = DrawOutcome()
    for stratum in sorted(quotas):
        wanted = max(quotas[stratum] - have.get(stratum, 0), 0)
        keys = np.asarray([k for k in members.get(stratum, ()) if k not in before], dtype=np.int64)
        order = keys[np.argsort(ranks(keys.tolist(), seed), kind="stable")].tolist()
        chosen: list[int] = []
        walked = 0
        while len(chosen) < wanted and walked < len(order):
            batch = order[walked : walked + max(2 * (wanted - len(chosen)), 64)]
            found = lookup(batch)
            for key in batch:
                if len(chosen) >= wanted:
                    break
                walked += 1
                candidate = found[key]
                clash = seen.clash(candidate)
                if clash == "duplicate":
                    outcome.duplicates_skipped += 1
                elif clash:
                    outcome.near_duplicates_skipped += 1
                else:
                    seen.add(candidate)
                    chosen.append(key)
        outcome.chosen[stratum] = chosen
        if walked == len(order):
            outcome.exhausted.add(stratum)
    return outcome


# --- answer balance ----------------------------------------------------------------------


@dataclass(frozen=True)
class Answerable:
    """A drawn multiple-choice item: how many options it has and where its answer is."""

    key: int
    stratum: Stratum
    option_count: int
    answer_position: int


def balance_positions(
    items: Sequence[Answerable], seed: int, *, standing: Sequence[Answerable] = ()
) -> dict[int, int]:
    """The answer position each item should take so that within each stratum every position
    is used as evenly as the option counts allow. Returns the new position by key, for the
    moved items only: an item keeps its position while that position still has room.

    The target count of each position comes first: items with the fewest options choose
    first, each the least used position it may take (their positions are a prefix of everyone
    else's, so this keeps the counts within one where the option counts allow it). Then the
    items are placed group by group of option count, keeping their own position where its
    target has room, the others taking the positions with the most room left; by the targets'
    construction the positions below k always have room for the items with k options.

    `standing` items (a top-up's earlier draws) count in the targets but never move: the new
    items fill the room they leave.
    """
    fixed = {item.key for item in standing}
    by_stratum: dict[Stratum, list[Answerable]] = defaultdict(list)
    for item in (*standing, *items):
        if item.option_count >= 2 and 0 <= item.answer_position < item.option_count:
            by_stratum[item.stratum].append(item)
    moved: dict[int, int] = {}
    for members in by_stratum.values():
        tie = ranks([m.key for m in members], seed).tolist()
        order = sorted(range(len(members)), key=lambda n: (members[n].option_count, tie[n]))
        room: dict[int, int] = defaultdict(int)
        for n in order:
            count = members[n].option_count
            least = min(room[p] for p in range(count))
            room[next(p for p in range(count) if room[p] == least)] += 1
        groups: dict[int, list[int]] = defaultdict(list)
        for n in order:
            if members[n].key in fixed:
                room[members[n].answer_position] -= 1
            else:
                groups[members[n].option_count].append(n)
        for count in sorted(groups):
            deferred = []
            for n in groups[count]:
                if room[members[n].answer_position] > 0:
                    room[members[n].answer_position] -= 1
                else:
                    deferred.append(n)
            for n in deferred:
                position = max(range(count), key=lambda p: (room[p], -p))
                room[position] -= 1
                moved[members[n].key] = position
    return moved


def move_answer(options: list[str], answer: int, target: int) -> list[str]:
    """The options with the answer's option swapped into position `target`."""
    moved = list(options)
    moved[answer], moved[target] = moved[target], moved[answer]
    return moved


def letter_counts(
    items: Iterable[Answerable], position_of: Callable[[Answerable], int] | None = None
) -> dict[str, dict[str, int]]:
    """Per stratum label ('a / b'), how many answers sit at each letter."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item in items:
        position = position_of(item) if position_of else item.answer_position
        counts[" / ".join(item.stratum)][chr(ord("A") + position)] += 1
    return {label: dict(sorted(letters.items())) for label, letters in sorted(counts.items())}
