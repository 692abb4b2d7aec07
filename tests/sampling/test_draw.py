"""The pure draw: quotas, seeds, duplicates on one image, answer balance (no database)."""

from __future__ import annotations

from collections import Counter

from annotations.sampling.draw import (
    Answerable,
    Candidate,
    balance_positions,
    draw,
    letter_counts,
    move_answer,
)

STRATA = [("colonoscopy", "polyp"), ("colonoscopy", "bleeding"), ("gastroscopy", "ulcer")]


def _pool(size_per_stratum=200, questions_per_image=4):
    pool: dict[int, Candidate] = {}
    key = 1
    for s, stratum in enumerate(STRATA):
        for n in range(size_per_stratum):
            image = f"img-{s}-{n // questions_per_image}"
            question = f"Question {n % questions_per_image} about finding {s}?"
            pool[key] = Candidate(key, stratum, (image,), question)
            key += 1
    return pool


def _members(pool):
    members: dict[tuple, list[int]] = {}
    for candidate in pool.values():
        members.setdefault(candidate.stratum, []).append(candidate.key)
    return members


def _lookup(pool):
    def lookup(keys):
        return {key: pool[key] for key in keys}

    return lookup


def test_quotas_are_met_exactly_per_stratum():
    pool = _pool()
    quotas = {STRATA[0]: 37, STRATA[1]: 5, STRATA[2]: 120}
    outcome = draw(_members(pool), quotas, 7, _lookup(pool))
    assert {stratum: len(keys) for stratum, keys in outcome.chosen.items()} == quotas
    assert all(
        pool[key].stratum == stratum for stratum, keys in outcome.chosen.items() for key in keys
    )
    assert not outcome.exhausted


def test_the_same_seed_draws_the_same_items_and_another_seed_others():
    pool = _pool()
    quotas = dict.fromkeys(STRATA, 30)
    first = draw(_members(pool), quotas, 42, _lookup(pool)).keys
    again = draw(_members(pool), quotas, 42, _lookup(pool)).keys
    other = draw(_members(pool), quotas, 43, _lookup(pool)).keys
    assert first == again
    assert set(first) != set(other)


def test_the_order_does_not_depend_on_the_members_order():
    pool = _pool()
    quotas = {STRATA[0]: 20}
    members = _members(pool)
    reversed_members = {s: list(reversed(keys)) for s, keys in members.items()}
    assert (
        draw(members, quotas, 3, _lookup(pool)).keys
        == draw(reversed_members, quotas, 3, _lookup(pool)).keys
    )


def test_no_two_drawn_items_share_image_and_question():
    pool = _pool(size_per_stratum=200, questions_per_image=4)
    # Every image also carries a second copy of each question, worded with other case.
    key = max(pool) + 1
    for candidate in list(pool.values()):
        pool[key] = Candidate(key, candidate.stratum, candidate.images, candidate.question.upper())
        key += 1
    outcome = draw(_members(pool), dict.fromkeys(STRATA, 150), 1, _lookup(pool))
    pairs = Counter((pool[k].images[0], pool[k].question.lower()) for k in outcome.keys)
    assert max(pairs.values()) == 1
    assert outcome.duplicates_skipped > 0


def test_near_duplicate_questions_on_one_image_are_drawn_once_when_asked():
    pool = {
        1: Candidate(1, ("s",), ("img",), "Which anatomical landmark is shown in this image?"),
        2: Candidate(2, ("s",), ("img",), "Which anatomical landmark is shown in the image?"),
        3: Candidate(3, ("s",), ("other",), "Which anatomical landmark is shown in the image?"),
    }
    members = {("s",): [1, 2, 3]}
    loose = draw(members, {("s",): 3}, 0, _lookup(pool))
    strict = draw(members, {("s",): 3}, 0, _lookup(pool), near_duplicates=True)
    assert sorted(loose.keys) == [1, 2, 3]
    assert len(strict.keys) == 2 and 3 in strict.keys
    assert strict.near_duplicates_skipped == 1
    assert ("s",) in strict.exhausted


def test_a_top_up_never_draws_an_item_again_and_fills_the_quota():
    pool = _pool()
    quotas = dict.fromkeys(STRATA, 40)
    first = draw(_members(pool), quotas, 9, _lookup(pool))
    rejected = first.chosen[STRATA[1]][:7]
    have = {stratum: len(keys) for stratum, keys in first.chosen.items()}
    have[STRATA[1]] -= len(rejected)
    earlier = [pool[key] for key in first.keys]
    top_up = draw(_members(pool), quotas, 9, _lookup(pool), drawn_before=earlier, have=have)
    assert len(top_up.chosen[STRATA[1]]) == 7
    assert top_up.chosen[STRATA[0]] == [] and top_up.chosen[STRATA[2]] == []
    assert not set(top_up.keys) & set(first.keys)
    pairs = {(pool[k].images[0], pool[k].question) for k in first.keys}
    assert all((pool[k].images[0], pool[k].question) not in pairs for k in top_up.keys)


def test_a_stratum_without_enough_candidates_is_exhausted():
    pool = _pool(size_per_stratum=10, questions_per_image=1)
    outcome = draw(_members(pool), {STRATA[0]: 25, STRATA[1]: 3}, 0, _lookup(pool))
    assert len(outcome.chosen[STRATA[0]]) == 10
    assert STRATA[0] in outcome.exhausted and STRATA[1] not in outcome.exhausted


def _skewed(count, option_count, stratum=("s",), start=0):
    # 60% of the answers are A: the bias a balanced draw removes.
    return [
        Answerable(start + n, stratum, option_count, 0 if n % 5 < 3 else n % option_count)
        for n in range(count)
    ]


def test_balance_spreads_each_letter_within_one_per_stratum():
    items = _skewed(103, 4) + _skewed(50, 5, ("t",), start=1000)
    moved = balance_positions(items, seed=5)
    after = letter_counts(items, lambda item: moved.get(item.key, item.answer_position))
    for letters in after.values():
        assert max(letters.values()) - min(letters.values()) <= 1
    assert set(after["s"]) == set("ABCD") and set(after["t"]) == set("ABCDE")
    before = letter_counts(items)
    assert before["s"]["A"] > 60  # it was skewed


def test_balance_with_mixed_option_counts_keeps_the_common_letters_within_one():
    # Two-option items can only be A or B; the four-option items fill C and D.
    items = _skewed(40, 2) + _skewed(80, 4, start=100)
    moved = balance_positions(items, seed=1)
    after = letter_counts(items, lambda item: moved.get(item.key, item.answer_position))["s"]
    assert all(moved.get(i.key, i.answer_position) < i.option_count for i in items)
    assert max(after.values()) - min(after.values()) <= 1  # 120 over 4 letters: 30 each


def test_balance_is_reproducible_and_keeps_balanced_items_in_place():
    items = [Answerable(n, ("s",), 4, n % 4) for n in range(40)]
    assert balance_positions(items, seed=3) == {}
    skewed = _skewed(40, 4)
    assert balance_positions(skewed, seed=3) == balance_positions(skewed, seed=3)


def test_moving_the_answer_swaps_two_options():
    assert move_answer(["a", "b", "c", "d"], 0, 2) == ["c", "b", "a", "d"]


def test_a_top_up_balances_its_items_against_the_letters_that_stand():
    # 30 standing items: A 15, B 5, C 5, D 5; 10 new ones, all A: they go to B, C and D.
    standing = [Answerable(n, ("s",), 4, 0 if n < 15 else n % 3 + 1) for n in range(30)]
    new = [Answerable(100 + n, ("s",), 4, 0) for n in range(10)]
    moved = balance_positions(new, seed=2, standing=standing)
    assert not set(moved) & {item.key for item in standing}
    after = letter_counts(
        [*standing, *new], lambda item: moved.get(item.key, item.answer_position)
    )["s"]
    others = [after[letter] for letter in "BCD"]
    assert sum(others) == 25 and max(others) - min(others) <= 1
    assert after["A"] == 15  # none of the new ones is put on the letter already over its share
