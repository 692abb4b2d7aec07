"""`reply_as_evaluated` against the real round trip of VLMEvalKit's default prediction file.

VLMEvalKit's inference writes predictions with `pd.ExcelWriter(engine="xlsxwriter",
engine_kwargs={"options": {"strings_to_formulas": False}})` and `to_excel(index=False)`; its
evaluation reads them with `pd.read_excel` and scores `str(cell)`. The same libraries do it here.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

from annotations.scoring.vlmeval import (
    PANDAS_NA_STRINGS,
    XLSX_CELL_LIMIT,
    options_as_loaded,
    prediction_as_evaluated,
    reply_as_evaluated,
)
from tests.scoring.conformance_corpus import mcq_rows, medqdeg_rows

AWKWARD_REPLIES = [
    "B\r\n",
    "a\rb",
    "\x00\x01\x0b\x1f control",
    "tab\there\nnewline",
    "_x0041_ looks like an escape",
    "_x005F_x0041_",
    "x005F_ in the middle",
    "\ufffe\uffff",
    "=1+1",
    "0.70",
    "1",
    " None",
    "None ",
    "  B  \n\n",
    "B" * (XLSX_CELL_LIMIT + 10),
    *sorted(PANDAS_NA_STRINGS),
]


def round_trip(replies: list[str], folder: Path) -> list[str]:
    path = folder / "predictions.xlsx"
    frame = pd.DataFrame({"index": range(len(replies)), "prediction": replies})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns when it cuts the long cell
        with pd.ExcelWriter(
            path, engine="xlsxwriter", engine_kwargs={"options": {"strings_to_formulas": False}}
        ) as writer:
            frame.to_excel(writer, index=False)
    return [str(cell) for cell in pd.read_excel(path)["prediction"]]


def test_the_modelled_round_trip_equals_the_real_one(tmp_path):
    replies = [
        *AWKWARD_REPLIES,
        *(row["prediction"] for row in mcq_rows()),
        *(row["prediction"] for row in medqdeg_rows()),
    ]
    evaluated = round_trip(replies, tmp_path)
    wrong = [
        (reply[:40], real[:40])
        for reply, real in zip(replies, evaluated, strict=True)
        if prediction_as_evaluated(reply) != real
    ]
    assert wrong == []


def test_a_carriage_return_comes_back_escaped_and_a_missing_value_as_nan():
    assert reply_as_evaluated("B\r\n") == "B_x000D_\n"
    assert reply_as_evaluated("N/A") is None
    assert prediction_as_evaluated("None") == "nan"
    assert prediction_as_evaluated(" None") == " None"  # only the exact spelling is missing
    assert len(reply_as_evaluated("x" * 40000)) == XLSX_CELL_LIMIT


def test_options_pandas_reads_as_missing_are_no_options():
    options = {"A": "Yes", "B": "No", "C": "None", "D": "", "E": "N/A", "F": " "}
    assert options_as_loaded(options) == {"A": "Yes", "B": "No", "F": " "}
