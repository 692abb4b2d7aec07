"""Reading quotas: --per flags and quota files, with errors that say what is wrong."""

from __future__ import annotations

import pytest

from annotations.sampling.quotas import QuotaError, parse_per, parse_quota_csv

FIELDS = ("scene", "task", "subtask", "category", "l2_category")


def test_per_flags_name_one_field_or_a_combination():
    assert parse_per(["task=50"], FIELDS) == (["task"], 50)
    assert parse_per(["scene,task=7"], FIELDS) == (["scene", "task"], 7)
    assert parse_per(["scene×task=7"], FIELDS) == (["scene", "task"], 7)
    assert parse_per(["scene=7", "task=7"], FIELDS) == (["scene", "task"], 7)
    assert parse_per(["l2-category=3"], FIELDS) == (["l2_category"], 3)


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["task"], "FIELD=N"),
        (["task=many"], "not a whole number"),
        (["task=0"], "at least 1"),
        (["colour=3"], "unknown field 'colour'"),
        (["task=3", "task=3"], "named twice"),
        (["scene=3", "task=4"], "quota file"),
        ([], "no quota"),
    ],
)
def test_bad_per_flags_are_refused_with_the_reason(specs, message):
    with pytest.raises(QuotaError, match=message):
        parse_per(specs, FIELDS)


def test_a_quota_file_gives_each_stratum_its_quota():
    text = "\ufeffscene,task,quota\ncolonoscopy,Polyp,10\n\ngastroscopy,Ulcer,0\n"
    assert parse_quota_csv(text, FIELDS) == (
        ["scene", "task"],
        {("colonoscopy", "Polyp"): 10, ("gastroscopy", "Ulcer"): 0},
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scene,task\na,b\n", "'quota' column"),
        ("colour,quota\nred,1\n", "unknown field"),
        ("scene,quota\na,1,2\n", "row 2: 3 cells"),
        ("scene,quota\na,x\n", "row 2: quota 'x'"),
        ("scene,quota\na,-1\n", "cannot be negative"),
        ("scene,quota\na,1\na,2\n", "row 3: stratum a is listed twice"),
        ("scene,quota\n", "lists no stratum"),
    ],
)
def test_a_bad_quota_file_is_refused_with_its_row(text, message):
    with pytest.raises(QuotaError, match=message):
        parse_quota_csv(text, FIELDS)
