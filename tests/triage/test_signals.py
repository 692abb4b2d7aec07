"""The pure triage signals, without a database."""

from __future__ import annotations

import io
import random

import numpy as np
from PIL import Image

from annotations.scoring.triage import (
    ItemFacts,
    ReviewFacts,
    RunVotes,
    answerable_without_image,
    broken_item,
    combine,
    duplicate_reasons,
    image_hashes,
    model_consensus,
    near_image_pairs,
    near_question_pairs,
    noisy_or,
    reads_as_empty,
    reviewer_signals,
)
from annotations.scoring.triage.consensus import loo_accuracy


def facts(key=1, question="Which finding?", options=("Polyp", "Ulcer", "Bleeding"), **kw):
    return ItemFacts(key=key, question=question, options=tuple(options), answer=kw.pop("answer", "A"), **kw)  # fmt: skip


def codes(item: ItemFacts) -> set[str]:
    return {reason.code for reason in broken_item(item)}


# --- broken items ---------------------------------------------------------------------------


def test_texts_pandas_reads_as_missing_are_empty_options():
    for text in ("None", "NA", "N/A", "null", "nan", "NaN", "#N/A", "n/a", "<NA>", "NULL", " NA "):
        assert reads_as_empty(text), text
    assert not reads_as_empty("Nausea")
    assert codes(facts(options=("Polyp", "NA", "Ulcer"))) == {"empty_option"}


def test_an_answer_on_a_na_option_is_out_of_range():
    assert "answer_out_of_range" in codes(facts(options=("Polyp", "None"), answer="B"))


def test_an_answer_letter_beyond_the_options_is_out_of_range():
    reason = broken_item(facts(answer="E"))[0]
    assert reason.code == "answer_out_of_range"
    assert reason.evidence == {"answer": "E", "letters": ["A", "B", "C"]}


def test_an_answer_beyond_the_letters_the_format_reads_is_out_of_range():
    item = facts(options=("a", "b", "c", "d", "e", "f"), answer="F", max_letters=5)
    assert codes(item) == {"answer_out_of_range"}


def test_an_empty_question_is_broken():
    assert codes(facts(question="  ")) == {"empty_question"}
    assert codes(facts(question="None")) == {"empty_question"}


def test_options_with_the_same_text_up_to_case_and_spaces_are_duplicates():
    reason = broken_item(facts(options=("Polyp", "Ulcer", " polyp")))[0]
    assert reason.code == "duplicate_options"
    assert reason.evidence["letters"] == [["A", "C"]]


def test_a_gt_naming_another_option_weighs_more_than_a_foreign_gt():
    other = broken_item(facts(gt="Ulcer"))[0]
    foreign = broken_item(facts(gt="Something else"))[0]
    assert other.code == foreign.code == "gt_mismatch"
    assert other.evidence["matches"] == ["B"]
    assert other.weight > foreign.weight


def test_a_sound_item_is_not_broken():
    assert broken_item(facts(gt=" polyp ")) == []


def test_numeric_texts_compare_as_numbers():
    numbers = ("0.70", "0.5", "1.0 cm", "[0.41, 0.57, 0.70, 0.86]")
    assert broken_item(facts(options=numbers, gt="0.7")) == []
    assert broken_item(facts(options=numbers, answer="C", gt="1 cm")) == []
    assert broken_item(facts(options=numbers, answer="D", gt="[0.410, 0.57, 0.7, 0.86]")) == []
    # The same number written twice is one option offered twice.
    reason = broken_item(facts(options=("0.7", "0.5", "0.70")))[0]
    assert reason.code == "duplicate_options" and reason.evidence["letters"] == [["A", "C"]]


def test_numbers_inside_names_and_different_numbers_stay_different():
    assert codes(facts(options=("0.7", "0.07", "7"), gt="0.70")) == set()
    assert codes(facts(options=("T1", "T10", "T01"), gt="T1")) == set()
    mismatch = broken_item(facts(options=("0.7", "0.8"), gt="0.71"))[0]
    assert mismatch.code == "gt_mismatch" and mismatch.evidence["matches"] == []


# --- model consensus ------------------------------------------------------------------------


def test_leave_one_out_accuracy_ignores_the_item_itself():
    assert loo_accuracy(hits=8, answered=10, own_hit=True) == (7 + 1) / (9 + 2)
    assert loo_accuracy(hits=8, answered=10, own_hit=False) == (8 + 1) / (9 + 2)


def _world(n=200, accuracy=0.85, runs=3, seed=3):
    rng = random.Random(seed)
    true = {i: rng.choice("ABCD") for i in range(n)}
    gold = dict(true)
    gold[0] = "B" if true[0] != "B" else "C"  # one flipped gold answer
    votes = []
    for r in range(runs):
        answers = {}
        for i in range(n):
            wrong = [x for x in "ABCD" if x != true[i]]
            answers[i] = true[i] if rng.random() < accuracy else rng.choice(wrong)
        answers[0] = true[0]
        votes.append(RunVotes(r, f"model {r}", answers))
    return true, gold, votes


def test_unanimous_models_against_the_gold_make_it_likely_wrong():
    true, gold, votes = _world()
    found = model_consensus(gold, {i: list("ABCD") for i in gold}, votes)
    reason = found[0]
    assert reason.weight > 0.8
    assert reason.evidence["consensus"] == true[0]
    assert reason.evidence["agree"] == 3
    assert [v["run"] for v in reason.evidence["votes"]] == ["model 0", "model 1", "model 2"]
    assert max(found.values(), key=lambda r: r.weight) is reason


def test_runs_no_better_than_chance_carry_no_weight():
    _true, gold, _votes = _world()
    guesser = RunVotes("g", "guesser", {i: random.Random(i).choice("ABCD") for i in gold})
    assert model_consensus(gold, {i: list("ABCD") for i in gold}, [guesser]) == {}


def test_a_gold_letter_outside_the_options_is_left_to_the_broken_check():
    votes = [RunVotes(r, str(r), {1: "A"}) for r in range(3)]
    assert model_consensus({1: "F"}, {1: ["A", "B"]}, votes) == {}


# --- answerable without the image ---------------------------------------------------------


def test_a_task_solved_without_images_is_flagged_and_weighs_its_items_more():
    gold = {i: "ABCD"[i % 4] for i in range(200)}
    tasks = {i: "anatomy" if i < 100 else "lesion" for i in gold}
    blind = RunVotes(
        "b",
        "blind",
        {i: gold[i] if i < 100 else random.Random(i).choice("ABCD") for i in gold},
    )
    found, by_task = answerable_without_image(gold, {i: list("ABCD") for i in gold}, tasks, [blind])
    assert by_task["anatomy"].flagged and not by_task["lesion"].flagged
    lucky = [k for k in found if k >= 100]
    assert lucky and found[0].weight > found[lucky[0]].weight
    assert "without images" in found[0].detail


# --- duplicates -----------------------------------------------------------------------------


def _texture(seed: int, quality: int) -> bytes:
    pixels = (np.random.default_rng(seed).random((8, 8, 3)) * 255).astype("uint8")
    buffer = io.BytesIO()
    Image.fromarray(pixels).resize((128, 128), Image.BICUBIC).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


def test_a_re_encoded_frame_hashes_alike_and_a_different_frame_does_not():
    first, again, other = (image_hashes(_texture(1, 95)), image_hashes(_texture(1, 40)),
                           image_hashes(_texture(2, 95)))  # fmt: skip
    assert (first[0] ^ again[0]).bit_count() <= 4
    assert (first[0] ^ other[0]).bit_count() > 12
    assert image_hashes(b"not an image") is None


def test_multi_index_hashing_finds_exactly_the_pairs_brute_force_finds():
    rng = random.Random(5)
    hashes = {f"img{i}": rng.getrandbits(64) for i in range(300)}
    base = hashes["img0"]
    hashes["near"] = base ^ 0b1011  # 3 bits apart
    hashes["far"] = base ^ ((1 << 20) - 1)  # 20 bits apart
    hashes["same"] = base
    expected = {
        frozenset((a, b))
        for a in hashes
        for b in hashes
        if a < b and (hashes[a] ^ hashes[b]).bit_count() <= 6
    }
    found = {frozenset((a, b)) for a, b, _d in near_image_pairs(hashes, max_distance=6)}
    assert found == expected
    assert frozenset(("img0", "near")) in found and frozenset(("img0", "far")) not in found


def test_near_identical_questions_pair_but_numbers_and_templates_do_not():
    questions = {
        1: "Which finding is shown in this frame?",
        2: "which finding is shown in this  frame",
        3: "Which finding is shown in this fram?",
        4: "How many polyps: 3?",
        5: "How many polyps: 2?",
        **{10 + i: "What organ is this?" for i in range(30)},  # a template
    }
    pairs = {frozenset((a, b)) for a, b, _s in near_question_pairs(questions)}
    assert frozenset((1, 2)) in pairs and frozenset((1, 3)) in pairs
    assert frozenset((4, 5)) not in pairs
    assert not any(10 in pair for pair in pairs)


def test_a_frame_shared_across_dev_and_test_is_leakage_and_within_a_split_is_normal():
    items = [
        facts(1, images=("x",), split="dev", group=1),
        facts(2, question="Other?", images=("x",), split="dev", group=2),
        facts(3, question="Third?", images=("x",), split="test", group=3),
    ]
    found = duplicate_reasons(items, [], [])
    assert {r.code for r in found[3]} == {"split_leakage"}
    assert found[3][0].evidence["count"] == 2
    assert all(r.code == "split_leakage" for r in found[1])


def test_twins_of_one_clean_image_are_never_duplicates_of_each_other():
    items = [facts(1, images=("clean",), group=1), facts(2, images=("blurred",), group=1)]
    assert duplicate_reasons(items, [("clean", "blurred", 3)], [(1, 2, 100.0)]) == {}


def test_the_same_question_weighs_more_on_the_same_image_than_on_another():
    items = [facts(1, images=("a",)), facts(2, images=("a",)), facts(3, images=("c",))]
    found = duplicate_reasons(items, [], [(1, 2, 100.0), (1, 3, 100.0)])
    weights = {e["item"]: r.weight for r in found[1] for e in r.evidence["others"]}
    assert weights[2] > found[3][0].weight


# --- reviewers and combining ----------------------------------------------------------------


def test_split_reviews_and_slow_reviews_are_signals_without_names():
    reviews = [ReviewFacts(i, "accept", 30.0) for i in range(2, 20)]
    reviews += [ReviewFacts(1, "reject", 400.0), ReviewFacts(1, "accept", 20.0)]
    reviews += [ReviewFacts(0, "reject", 30.0), ReviewFacts(0, "reject", 30.0)]
    found = reviewer_signals(reviews)
    assert {r.code for r in found[1]} == {"reviewer_rejected", "slow_review"}
    assert 0 not in found  # an agreed rejection is a decision, not a doubt
    assert all("reviewer" not in str(r.evidence) for r in found[1])


def test_noisy_or_grows_with_every_reason_and_stays_below_one():
    assert noisy_or([]) == 0.0
    assert noisy_or([0.5, 0.5]) == 0.75
    assert noisy_or([0.9, 0.1]) > 0.9


def test_combine_ranks_items_by_score_with_reasons_strongest_first():
    ranked = combine(
        {1: broken_item(facts(1, answer="Z"))}, {2: broken_item(facts(2, gt="x"))},
        {1: broken_item(facts(1, options=("a", "a")))},
    )  # fmt: skip
    assert [s.key for s in ranked] == [1, 2]
    assert ranked[0].codes()[0] == "answer_out_of_range"


def test_flat_frames_are_not_duplicates_of_each_other():
    flat = {"a": 1 << 63, "b": 1 << 63}
    assert near_image_pairs(flat, dhashes={"a": 0, "b": 0}) == []
    assert len(near_image_pairs(flat, dhashes={"a": 5, "b": 5})) == 1
