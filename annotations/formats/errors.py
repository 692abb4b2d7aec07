"""Problems found while reading a benchmark file.

Imports are all-or-nothing with a report of every bad row, so readers collect
`RowProblem`s instead of stopping at the first one. Problems that make the whole
file unreadable (no header, not UTF-8, truncated...) raise `FormatError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RowProblem:
    """One problem in one data row; `row` is 1-based, the header (or the file as a whole) is
    row 0. `reason` says what was found in the file's own terms (English); `code`, when set, is
    a stable reason code the app translates for display (annotations/labels.py)."""

    row: int
    column: str | None
    reason: str
    code: str = field(default="", compare=False)

    def __str__(self) -> str:
        where = f"row {self.row}"
        if self.column is not None:
            where += f", column '{self.column}'"
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class RowWarning:
    """Something imported as it is but worth a curator's look (a removed metadata segment, a
    formula-looking cell, a degradation that does not fit the row's modality).

    `code` is a stable reason code that the app translates for display; `detail` says what was
    found, in the file's own terms. Readers collect these in a `warnings` list beside `problems`.
    """

    row: int
    column: str | None
    code: str
    detail: str = ""


class FormatError(Exception):
    """The file as a whole cannot be read; `problems` says where and why."""

    def __init__(self, problems: RowProblem | Iterable[RowProblem]) -> None:
        if isinstance(problems, RowProblem):
            problems = [problems]
        self.problems: list[RowProblem] = list(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))
