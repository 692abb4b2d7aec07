"""Our extractors against every row of the VLMEvalKit conformance corpus (see conformance/)."""

from __future__ import annotations

from annotations.scoring import extract_mcq, extract_medqdeg, read_reply
from annotations.scoring.extract import medqdeg_hit, medqdeg_value, vlmeval_opt
from annotations.scoring.vlmeval import (
    VLMEVAL_COMMIT,
    VLMEVAL_SOURCES,
    options_as_loaded,
    reply_as_evaluated,
)
from tests.scoring.conformance_corpus import FOLDER, mcq_rows, medqdeg_rows, options_of


def test_the_pinned_commit_and_sources_are_the_corpus_ones():
    corpus_readme = (FOLDER / "CORPUS.md").read_text(encoding="utf-8")
    assert f"commit `{VLMEVAL_COMMIT}`" in corpus_readme
    for path, digest in VLMEVAL_SOURCES.items():
        assert f"{digest}  {path}" in corpus_readme


def test_every_mcq_row_gets_vlmevalkits_letter():
    rows = mcq_rows()
    wrong = [
        (row["id"], row["prediction"], vlmeval_opt(row["prediction"], options_of(row)))
        for row in rows
        if vlmeval_opt(row["prediction"], options_of(row)) != row["vlmeval_letter"]
    ]
    assert len(rows) == 748
    assert wrong == []


def test_every_mcq_row_gets_vlmevalkits_hit_and_z_means_no_letter():
    for row in mcq_rows():
        letter = extract_mcq(row["prediction"], options_of(row))
        expected = None if row["vlmeval_letter"] == "Z" else row["vlmeval_letter"]
        assert letter == expected, row["id"]
        assert (letter == row["answer"]) == (row["vlmeval_hit"] == "1"), row["id"]


def test_every_medqdeg_row_gets_vlmevalkits_value():
    rows = medqdeg_rows()
    wrong = [
        (row["id"], row["prediction"], medqdeg_value(row["prediction"]))
        for row in rows
        if medqdeg_value(row["prediction"]) != row["vlmeval_letter"]
    ]
    assert len(rows) == 287
    assert wrong == []


def test_every_medqdeg_row_gets_a_letter_exactly_when_vlmevalkit_finds_one():
    for row in medqdeg_rows():
        letter = extract_medqdeg(row["prediction"])
        expected = row["vlmeval_letter"] if row["letter_found"] == "1" else None
        assert letter == expected, row["id"]


def test_read_reply_agrees_with_the_corpus_wherever_the_prediction_file_changes_nothing():
    # read_reply also models VLMEvalKit's prediction file (a reply "None" is NaN there, a CR
    # becomes "_x000D_"): on every other row it must give the corpus' letter and hit.
    mcq_compared = 0
    for row in mcq_rows():
        options = options_of(row)
        if reply_as_evaluated(row["prediction"]) != row["prediction"]:
            continue
        if options_as_loaded(options) != {k: v for k, v in options.items() if v}:
            continue
        reading = read_reply(
            family="endobench", reply=row["prediction"], options=options, answer=row["answer"]
        )
        expected = "" if row["vlmeval_letter"] == "Z" else row["vlmeval_letter"]
        assert (reading.letter, reading.hit) == (expected, row["vlmeval_hit"] == "1"), row["id"]
        mcq_compared += 1
    medqdeg_compared = 0
    for number, row in enumerate(medqdeg_rows()):
        if reply_as_evaluated(row["prediction"]) != row["prediction"]:
            continue
        answer = "ABCDE"[number % 5]
        reading = read_reply(
            family="medqdeg", reply=row["prediction"], options={"A": "x", "B": "y"}, answer=answer
        )
        found = row["letter_found"] == "1"
        assert reading.letter == (row["vlmeval_letter"] if found else ""), row["id"]
        assert reading.hit == medqdeg_hit(row["vlmeval_letter"], answer), row["id"]
        medqdeg_compared += 1
    # The rows left out are the empty, "nan"/"None"/"N/A" and CR replies of the corpus.
    assert (mcq_compared, medqdeg_compared) == (727, 280)
