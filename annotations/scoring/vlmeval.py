"""The VLMEvalKit our scores follow: one pinned commit, and how its pipeline reads cells back.

Every rule in `extract`, `judge` and `accuracy` that claims "as VLMEvalKit does" was read from the
files below at this commit, and the conformance corpus (`tests/scoring/conformance/`) holds the
letters VLMEvalKit's own code returned there. Run pages show `VLMEVAL_COMMIT`; bump it only
together with the corpus and the rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

VLMEVAL_REPOSITORY = "open-compass/VLMEvalKit"
VLMEVAL_COMMIT = "e8e78f0"
VLMEVAL_VERSION = "0.2rc1"
# The source files whose behaviour our scoring reproduces, with their SHA-256 at VLMEVAL_COMMIT.
VLMEVAL_SOURCES: dict[str, str] = {
    "vlmeval/utils/matching_util.py": (
        "06088ed4da68cd9d8c3018e7630d0503f1365e6dd31f651cbedd8aa44dc14466"
    ),
    "vlmeval/dataset/utils/multiple_choice.py": (
        "39188c274e60899ceeff9f4180cbf0f9c798dd8954da0f9dccc85da0951d54c6"
    ),
    "vlmeval/dataset/medq_deg_bench.py": (
        "82c150a19a1499796fb77f88b3ac2bc0220e043ec1772c226fe3be3a72adca41"
    ),
}

# Cells pandas (2.x and 3.x `STR_NA_VALUES`) reads as NaN by default. VLMEvalKit loads benchmark
# TSVs and its own prediction files with pandas' defaults, so an option, a category or a model
# reply spelled exactly like one of these is a missing value there.
PANDAS_NA_STRINGS = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)

# VLMEvalKit writes predictions to an .xlsx file by default (PRED_FORMAT unset): xlsxwriter cuts
# a string cell to Excel's limit and escapes control characters as `_xHHHH_` (an existing
# `_xHHHH_` gets an escaped underscore); openpyxl, reading it back for evaluation, only drops the
# underscore escapes. So a reply's CR comes back as the text "_x000D_".
XLSX_CELL_LIMIT = 32767
_XLSX_ESCAPE_LOOKALIKE = re.compile(r"(_x[0-9a-fA-F]{4}_)")
_XLSX_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]")


def reads_as_nan(value: object) -> bool:
    """Whether pandas' default reading makes this cell NaN (None and NaN themselves included)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return isinstance(value, str) and value in PANDAS_NA_STRINGS


def reply_as_evaluated(reply: str | None) -> str | None:
    """The reply as VLMEvalKit's evaluation sees it after its prediction file's round trip.

    Inference stores the reply in the default .xlsx prediction file; evaluation reads it back
    with pandas (openpyxl), where a reply spelled like a missing value ("None", "N/A", "")
    becomes NaN. None stands for that NaN: the generic MCQ evaluator then scores the text "nan"
    (`str(NaN)`), MedQ-DEG's keeps the NaN. Checked against the real libraries in
    tests/scoring/test_vlmeval_pipeline.py.
    """
    if reply is None:
        return None
    kept = reply[:XLSX_CELL_LIMIT]
    kept = _XLSX_ESCAPE_LOOKALIKE.sub(r"_x005F\1", kept)
    kept = _XLSX_CONTROL.sub(lambda match: f"_x{ord(match.group()):04X}_", kept)
    kept = kept.replace("x005F_", "")
    return None if reads_as_nan(kept) else kept


def options_as_loaded(options: Mapping[str, str | None]) -> dict[str, str]:
    """The options of a benchmark row as VLMEvalKit loads them: a cell pandas reads as NaN
    ("", "None", "N/A"...) is no option. (A whole option column of numbers would be read as
    numbers, "0.70" as 0.7; that depends on the other rows and is not modelled here.)"""
    return {
        letter: text
        for letter, text in options.items()
        if text is not None and not reads_as_nan(text)
    }


def prediction_as_evaluated(reply: str | None) -> str:
    """The prediction text the generic MCQ evaluator matches: `str()` of the read-back cell."""
    evaluated = reply_as_evaluated(reply)
    return "nan" if evaluated is None else evaluated
