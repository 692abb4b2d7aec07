"""The vendored conformance corpus, read the way its README says (byte-exact, no NaN)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

FOLDER = Path(__file__).parent / "conformance"
MCQ_FILE = FOLDER / "vlmeval_mcq_extraction.tsv"
MEDQDEG_FILE = FOLDER / "medqdeg_extraction.tsv"
SHA256 = {
    MCQ_FILE: "5b15c8ad1616ff57aa01720c53a43b6e151ce5fd769fa784ad8a8962e148802a",
    MEDQDEG_FILE: "95e05763f2356f2fe41bf201cd0719e4b4a7cfd0fd5b4a10e9150182f27a6cc4",
}
OPTION_COLUMNS = "ABCDEFGH"


def _read(path: Path) -> pd.DataFrame:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == SHA256[path], f"{path.name} is not the vendored corpus (sha256 {digest})"
    return pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)


def mcq_rows() -> list[dict[str, str]]:
    return _read(MCQ_FILE).to_dict("records")


def medqdeg_rows() -> list[dict[str, str]]:
    return _read(MEDQDEG_FILE).to_dict("records")


def options_of(row: dict[str, str]) -> dict[str, str]:
    """The row's options; an empty cell is no option (VLMEvalKit's NaN)."""
    return {letter: row[letter] for letter in OPTION_COLUMNS}
