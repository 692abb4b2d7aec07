from __future__ import annotations

from collections import Counter

from annotations.inference import (
    FirstOptionBaseline,
    FrequentAnswerBaseline,
    InferenceItem,
    RandomBaseline,
    predict,
)


def make_item(
    key: str = "1", options: dict[str, str] | None = None, category: str = ""
) -> InferenceItem:
    return InferenceItem(
        key=key,
        question="Which finding?",
        options=options if options is not None else {"A": "a", "B": "b", "C": "c", "D": "d"},
        hint="",
        images=[],
        family="endobench",
        category=category,
    )


def test_random_baseline_gives_the_same_answer_for_the_same_seed_and_key():
    items = [make_item(key=str(index)) for index in range(50)]

    first = [RandomBaseline(seed=7).answer(item).text for item in items]
    second = [RandomBaseline(seed=7).answer(item).text for item in items]

    assert first == second


def test_random_baseline_changes_with_the_seed_and_spreads_over_the_options():
    items = [make_item(key=str(index)) for index in range(200)]

    seven = [RandomBaseline(seed=7).answer(item).text for item in items]
    eight = [RandomBaseline(seed=8).answer(item).text for item in items]

    assert seven != eight
    assert set(seven) == {"A", "B", "C", "D"}


def test_random_baseline_only_picks_non_empty_options():
    options = {"A": "", "B": "b", "C": "", "D": "d", "E": ""}

    answers = {RandomBaseline(seed=1).answer(make_item(str(i), options)).text for i in range(100)}

    assert answers == {"B", "D"}


def test_first_option_baseline_skips_leading_empty_options():
    item = make_item(options={"A": "", "B": "Ulcer", "C": "Polyp"})

    assert FirstOptionBaseline().answer(item).text == "B"


def test_baselines_answer_nothing_when_no_option_has_text():
    item = make_item(options={"A": "", "B": ""})

    assert RandomBaseline(seed=3).answer(item).text == ""
    assert FirstOptionBaseline().answer(item).text == ""


def test_frequent_answer_baseline_picks_the_categorys_most_frequent_gold_letter():
    baseline = FrequentAnswerBaseline(
        {"polyp": Counter({"A": 1, "C": 5, "B": 2}), "ulcer": Counter({"D": 4, "A": 1})}
    )

    assert baseline.answer(make_item(category="polyp")).text == "C"
    assert baseline.answer(make_item(category="ulcer")).text == "D"


def test_frequent_answer_baseline_breaks_ties_with_the_earliest_letter():
    baseline = FrequentAnswerBaseline({"x": Counter({"D": 3, "B": 3, "C": 1})})

    assert baseline.answer(make_item(category="x")).text == "B"


def test_frequent_answer_baseline_ignores_letters_the_item_does_not_offer():
    baseline = FrequentAnswerBaseline({"x": Counter({"E": 9, "B": 2})})

    assert baseline.answer(make_item(category="x")).text == "B"


def test_frequent_answer_baseline_pools_counts_for_an_unseen_category():
    baseline = FrequentAnswerBaseline(
        {"x": Counter({"A": 2}), "y": Counter({"C": 1, "A": 1, "D": 2})}
    )

    assert baseline.answer(make_item(category="never seen")).text == "A"


def test_predict_with_a_baseline_needs_no_network_and_reports_no_tokens():
    completion = predict(FirstOptionBaseline(), make_item(), family="endobench")

    assert completion.text == "A"
    assert completion.prompt_tokens is None
    assert completion.completion_tokens is None
    assert completion.attempts == 1
