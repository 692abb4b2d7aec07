"""Reading Gastric-X case folders (or a ``.zip`` of them); layout and schema in FORMATS.md.

One folder per case: ``CASE/case.json``, ``CASE/ct/<phase>/*.dcm`` or ``CASE/ct/<phase>.nii.gz``
and ``CASE/endoscopy.jpg|png``. The reader checks layout and ``case.json`` without loading any
volume; once volumes are loaded, ``validate_case_volumes`` checks the boxes against their
shapes. Problems are collected per case (``CaseData.problems``, ``row`` = the case's 1-based
position in folder-name order): rejecting the whole import is the caller's decision.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from annotations.formats.errors import FormatError, RowProblem
from annotations.formats.jsontext import NUL_REASON, first_nul
from annotations.formats.safezip import (
    DEFAULT_MAX_ZIP_BYTES,
    DEFAULT_MAX_ZIP_ENTRIES,
    extract_zip,
)

PHASES = ("non_contrast", "arterial", "venous", "delayed")
BOX_LABELS = ("tumor", "lymph_node", "stomach")
REPORT_KINDS = ("diagnostic", "ct", "endoscopy")
REQUIRED_FIELDS = ("case_id", "tnm", "indicators", "reports", "boxes", "vqa")
# The TNM components of gastric cancer (AJCC 8th edition): the fixed label sets of the
# classification task. The whole code's label set is the codes a benchmark holds.
T_LABELS = ("TX", "T0", "Tis", "T1", "T1a", "T1b", "T2", "T3", "T4", "T4a", "T4b")
N_LABELS = ("NX", "N0", "N1", "N2", "N3", "N3a", "N3b")
M_LABELS = ("M0", "M1")
TNM_FIELDS = ("tnm", "t", "n", "m")
_TNM_PATTERN = re.compile(r"^(T[0-9A-Z]+?)(N[0-9A-Z]+?)(M[0-9A-Z]+)$", re.IGNORECASE)
ENDOSCOPY_NAMES = ("endoscopy.jpg", "endoscopy.jpeg", "endoscopy.png")
NIFTI_SUFFIXES = (".nii.gz", ".nii")

T = TypeVar("T")


# Longest indicator name, unit and value text a case may give (the database keeps no more).
INDICATOR_NAME_MAX = 100
INDICATOR_UNIT_MAX = 40
INDICATOR_TEXT_MAX = 40
# The same for the case's id, its TNM stage and a question's task.
CASE_ID_MAX = 100
TNM_MAX = 40
TASK_MAX = 200


@dataclass(frozen=True)
class Indicator:
    """One biochemical indicator (serum test or tumor marker)."""

    name: str
    value: float | str | None
    unit: str | None
    reference_range: tuple[float, float] | None


@dataclass(frozen=True)
class BoxSpec:
    """A 3D box on one phase: end-exclusive voxel range ``(x0, y0, z0, x1, y1, z1)``."""

    phase: str
    label: str
    voxel: tuple[int, int, int, int, int, int]


@dataclass(frozen=True)
class VqaSpec:
    """A multiple-choice question about the case; ``answer`` is the option letter.

    ``extra`` keeps the question's keys this reader does not know (e.g. an id), as given.
    """

    question: str
    options: list[str]
    answer: str
    task: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TnmLabels:
    """A TNM code split into its labels: ``tnm`` is the whole code in canonical spelling."""

    tnm: str
    t: str
    n: str
    m: str

    def by_field(self) -> dict[str, str]:
        return {"tnm": self.tnm, "t": self.t, "n": self.n, "m": self.m}


@dataclass
class CaseData:
    """One case as read from its folder; ``problems`` is empty when the case is valid.

    ``extra`` keeps case.json's keys this reader does not know, as given, for round trips.
    """

    case_id: str
    tnm: str | None
    indicators: list[Indicator]
    reports: dict[str, str | None]
    boxes: list[BoxSpec]
    vqa: list[VqaSpec]
    phases: dict[str, Path]
    endoscopy: Path | None
    folder: Path
    row: int = 0
    problems: list[RowProblem] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    tnm_labels: TnmLabels | None = None


def read_gastricx_root(root: Path) -> Iterator[CaseData]:
    """Cases under ``root``, one per folder holding a ``case.json``, in folder-name order.

    A root that is itself a case folder, or that wraps the case folders in one extra folder
    (as zips often do), is accepted. Raises ``FormatError`` when no case can be found.
    """
    folders = _case_folders(Path(root))
    return _read_cases(folders)


def read_gastricx_zip(
    zip_path: Path,
    extract_to: Path,
    *,
    max_total_bytes: int = DEFAULT_MAX_ZIP_BYTES,
    max_entries: int = DEFAULT_MAX_ZIP_ENTRIES,
) -> Iterator[CaseData]:
    """Safely extract ``zip_path`` into the empty folder ``extract_to``, then read its cases.

    Refuses (``FormatError``, nothing left extracted) entries that would land outside
    ``extract_to`` (``..``, absolute paths, drive letters, symlinks), encrypted entries, more
    than ``max_entries`` entries and more than ``max_total_bytes`` uncompressed bytes, counted
    while writing so that a lying header cannot get past the limit.
    """
    extract_zip(zip_path, extract_to, max_total_bytes=max_total_bytes, max_entries=max_entries)
    return read_gastricx_root(Path(extract_to))


def validate_case_volumes(
    case: CaseData, shapes: dict[str, tuple[int, int, int]]
) -> list[RowProblem]:
    """Problems with the case's boxes once volumes are loaded; ``shapes`` maps phase → (z, y, x)."""
    problems = []
    for number, box in enumerate(case.boxes):
        column = f"boxes[{number}].voxel"
        shape = shapes.get(box.phase)
        if shape is None:
            problems.append(
                RowProblem(case.row, column, f"no {box.phase} volume for this box", "box_outside")
            )
            continue
        sizes = {"x": shape[2], "y": shape[1], "z": shape[0]}
        for axis, name in enumerate("xyz"):
            if box.voxel[axis + 3] > sizes[name]:
                reason = (
                    f"{name}1={box.voxel[axis + 3]} is outside the {box.phase} volume "
                    f"({name} size {sizes[name]})"
                )
                problems.append(RowProblem(case.row, column, reason, "box_outside"))
    return problems


# --- case folders ------------------------------------------------------------------------------


def _visible_dirs(folder: Path) -> list[Path]:
    # __MACOSX and dot-folders are archive clutter, not cases.
    return sorted(
        p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__MACOSX"))
    )


def _case_folders(root: Path) -> list[Path]:
    if not root.is_dir():
        raise FormatError(
            RowProblem(0, None, f"Gastric-X root folder not found: {root}", "no_items")
        )
    if (root / "case.json").is_file():
        return [root]
    subfolders = _visible_dirs(root)
    if not any((p / "case.json").is_file() for p in subfolders) and len(subfolders) == 1:
        return _case_folders(subfolders[0])
    if not any((p / "case.json").is_file() for p in subfolders):
        raise FormatError(RowProblem(0, None, "no case folders (CASE/case.json) found", "no_items"))
    return subfolders


def _read_cases(folders: list[Path]) -> Iterator[CaseData]:
    seen: dict[str, str] = {}
    for row, folder in enumerate(folders, start=1):
        case = read_case_folder(folder, row=row)
        if case.case_id and case.case_id in seen:
            reason = f"case_id {case.case_id!r} already used by folder {seen[case.case_id]}"
            case.problems.append(RowProblem(row, "case_id", reason, "duplicate_case"))
        seen.setdefault(case.case_id, folder.name)
        yield case


def read_case_folder(folder: Path, *, row: int = 1) -> CaseData:
    """Read and check one case folder; problems are collected in the returned ``CaseData``."""
    problems: list[RowProblem] = []
    data = _load_case_json(folder, row, problems)
    phases = _find_phases(folder, row, problems)
    case = CaseData(
        case_id=_case_id(data, folder, row, problems),
        tnm=_optional_text(data, "tnm", row, problems),
        indicators=_parse_list(data, "indicators", _parse_indicator, row, problems),
        reports=_parse_reports(data.get("reports"), row, problems),
        boxes=_parse_list(data, "boxes", _parse_box, row, problems),
        vqa=_parse_list(data, "vqa", _parse_vqa, row, problems),
        phases=phases,
        endoscopy=_find_endoscopy(folder, row, problems),
        folder=folder,
        row=row,
        problems=problems,
        extra={key: value for key, value in data.items() if key not in REQUIRED_FIELDS},
    )
    if case.tnm is not None:
        try:
            case.tnm_labels = parse_tnm(case.tnm)
        except ValueError as error:
            problems.append(RowProblem(row, "tnm", str(error), "bad_tnm"))
    for number, box in enumerate(case.boxes):
        if phases and box.phase not in phases:
            reason = f"box on phase {box.phase!r} but the case has no {box.phase} CT"
            problems.append(RowProblem(row, f"boxes[{number}].phase", reason, "box_outside"))
    return case


def _load_case_json(folder: Path, row: int, problems: list[RowProblem]) -> dict[str, Any]:
    path = folder / "case.json"
    if not path.is_file():
        problems.append(
            RowProblem(row, None, f"folder {folder.name} has no case.json", "no_case_json")
        )
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        problems.append(
            RowProblem(
                row, None, f"{folder.name}/case.json is not valid JSON: {error}", "bad_case_json"
            )
        )
        return {}
    if not isinstance(data, dict):
        problems.append(
            RowProblem(
                row, None, f"{folder.name}/case.json must hold a JSON object", "bad_case_json"
            )
        )
        return {}
    nul = first_nul(data)
    if nul is not None:
        reason = f"{folder.name}/case.json {nul} {NUL_REASON}"
        problems.append(RowProblem(row, nul, reason, "nul_character"))
        return {}
    for name in REQUIRED_FIELDS:
        if name not in data:
            problems.append(
                RowProblem(
                    row, name, f"{folder.name}/case.json lacks field {name!r}", "missing_field"
                )
            )
    return data


def _case_id(data: dict[str, Any], folder: Path, row: int, problems: list[RowProblem]) -> str:
    value = data.get("case_id")
    if "case_id" in data and (not isinstance(value, str) or not value.strip()):
        problems.append(
            RowProblem(row, "case_id", "case_id must be a non-empty string", "bad_value")
        )
    elif isinstance(value, str) and len(value.strip()) > CASE_ID_MAX:
        problems.append(
            RowProblem(row, "case_id", _too_long(len(value.strip()), CASE_ID_MAX), "too_long")
        )
    return value.strip() if isinstance(value, str) else ""


def _optional_text(
    data: dict[str, Any], name: str, row: int, problems: list[RowProblem]
) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        problems.append(RowProblem(row, name, f"{name} must be a string or null", "bad_value"))
        return None
    if name == "tnm" and value is not None and len(value) > TNM_MAX:
        problems.append(RowProblem(row, name, _too_long(len(value), TNM_MAX), "too_long"))
    return value


def _too_long(length: int, limit: int) -> str:
    return f"{length} characters, longer than the {limit} this field may hold"


def _parse_list(
    data: dict[str, Any],
    name: str,
    parse: Callable[[dict[str, Any]], T],
    row: int,
    problems: list[RowProblem],
) -> list[T]:
    values = data.get(name, [])
    if not isinstance(values, list):
        problems.append(RowProblem(row, name, f"{name} must be a list", "bad_value"))
        return []
    parsed: list[T] = []
    for number, value in enumerate(values):
        column = f"{name}[{number}]"
        if not isinstance(value, dict):
            problems.append(RowProblem(row, column, "must be a JSON object", "bad_value"))
            continue
        try:
            parsed.append(parse(value))
        except ValueError as error:
            problems.append(RowProblem(row, column, str(error), "bad_value"))
    return parsed


def _parse_indicator(value: dict[str, Any]) -> Indicator:
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError("indicator needs a non-empty name")
    amount = value.get("value")
    if isinstance(amount, bool) or not isinstance(amount, int | float | str | None):
        raise ValueError(f"indicator {name}: value must be a number, a string or null")
    if isinstance(amount, str) and len(amount.strip()) > INDICATOR_TEXT_MAX:
        raise ValueError(f"indicator {name}: value is longer than {INDICATOR_TEXT_MAX} characters")
    unit = value.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise ValueError(f"indicator {name}: unit must be a string or null")
    if len(name.strip()) > INDICATOR_NAME_MAX:
        raise ValueError(f"indicator name is longer than {INDICATOR_NAME_MAX} characters")
    if unit is not None and len(unit) > INDICATOR_UNIT_MAX:
        raise ValueError(f"indicator {name}: unit is longer than {INDICATOR_UNIT_MAX} characters")
    return Indicator(
        name=name.strip(),
        value=float(amount) if isinstance(amount, int | float) else amount,
        unit=unit,
        reference_range=_reference_range(name, value.get("reference_range")),
    )


def _reference_range(name: str, value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    numbers = value if isinstance(value, list) and len(value) == 2 else None
    if numbers is None or not all(_is_number(v) for v in numbers) or numbers[0] > numbers[1]:
        raise ValueError(f"indicator {name}: reference_range must be [low, high] or null")
    return (float(numbers[0]), float(numbers[1]))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse_reports(value: Any, row: int, problems: list[RowProblem]) -> dict[str, str | None]:
    reports: dict[str, str | None] = dict.fromkeys(REPORT_KINDS)
    if value is None:
        return reports
    if not isinstance(value, dict):
        problems.append(RowProblem(row, "reports", "reports must be an object", "bad_value"))
        return reports
    for kind in REPORT_KINDS:
        if kind not in value:
            reason = f"reports lacks {kind!r} (give its text, or null when the case has none)"
            problems.append(RowProblem(row, f"reports.{kind}", reason, "missing_field"))
    for kind, text in value.items():
        if kind not in REPORT_KINDS:
            problems.append(
                RowProblem(
                    row,
                    "reports",
                    f"unknown report {kind!r}; expected {', '.join(REPORT_KINDS)}",
                    "bad_value",
                )
            )
        elif text is not None and not isinstance(text, str):
            problems.append(
                RowProblem(row, f"reports.{kind}", "a report must be a string or null", "bad_value")
            )
        elif text is not None and not text.strip():
            reason = "a report must hold text (use null when the case has none)"
            problems.append(RowProblem(row, f"reports.{kind}", reason, "bad_value"))
        else:
            reports[kind] = text
    return reports


def parse_tnm(code: str) -> TnmLabels:
    """Split a TNM code ("T3N1M0", "t4a n3b m0") into labels of the fixed T, N and M sets.

    Raises ``ValueError`` naming the component outside its label set.
    """
    match = _TNM_PATTERN.match("".join(code.split()))
    if match is None:
        raise ValueError(f"TNM code {code!r} is not T…N…M… (e.g. T3N1M0)")
    labels = []
    for text, allowed in zip(match.groups(), (T_LABELS, N_LABELS, M_LABELS), strict=True):
        found = next((label for label in allowed if label.lower() == text.lower()), None)
        if found is None:
            raise ValueError(
                f"TNM code {code!r}: {text} is not in the label set {', '.join(allowed)}"
            )
        labels.append(found)
    return TnmLabels(tnm="".join(labels), t=labels[0], n=labels[1], m=labels[2])


def tnm_label_sets(codes: Sequence[str]) -> dict[str, list[str]]:
    """The classification label sets of a benchmark whose cases have the canonical `codes`."""
    order = {label: position for position, label in enumerate(T_LABELS + N_LABELS + M_LABELS)}

    def key(code: str) -> tuple[int, ...]:
        labels = parse_tnm(code)
        return (order[labels.t], order[labels.n], order[labels.m])

    return {
        "tnm": sorted(set(codes), key=key),
        "t": list(T_LABELS),
        "n": list(N_LABELS),
        "m": list(M_LABELS),
    }


def _parse_box(value: dict[str, Any]) -> BoxSpec:
    phase, label, voxel = value.get("phase"), value.get("label"), value.get("voxel")
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}")
    if label not in BOX_LABELS:
        raise ValueError(f"unknown label {label!r}; expected one of {', '.join(BOX_LABELS)}")
    if not isinstance(voxel, list) or len(voxel) != 6 or not all(_is_int(v) for v in voxel):
        raise ValueError(f"voxel must be 6 integers [x0, y0, z0, x1, y1, z1], got {voxel!r}")
    for axis, name in enumerate("xyz"):
        if voxel[axis] < 0 or voxel[axis + 3] <= voxel[axis]:
            raise ValueError(f"need 0 ≤ {name}0 < {name}1 (end-exclusive), got {voxel!r}")
    x0, y0, z0, x1, y1, z1 = voxel
    return BoxSpec(phase=phase, label=label, voxel=(x0, y0, z0, x1, y1, z1))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_vqa(value: dict[str, Any]) -> VqaSpec:
    question, options = value.get("question"), value.get("options")
    answer, task = value.get("answer"), value.get("task", "")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be a non-empty string")
    if not isinstance(options, list) or not _is_option_list(options):
        raise ValueError("options must be a list of 2 to 26 non-empty strings")
    letters = [chr(ord("A") + i) for i in range(len(options))]
    if not isinstance(answer, str) or answer.strip().upper() not in letters:
        raise ValueError(f"answer {answer!r} is not one of the option letters {''.join(letters)}")
    if task is not None and not isinstance(task, str):
        raise ValueError("task must be a string")
    if task and len(task) > TASK_MAX:
        raise ValueError(f"task: {_too_long(len(task), TASK_MAX)}")
    known = ("question", "options", "answer", "task")
    return VqaSpec(
        question=question,
        options=list(options),
        answer=answer.strip().upper(),
        task=task or "",
        extra={key: item for key, item in value.items() if key not in known},
    )


def _is_option_list(options: Any) -> bool:
    return (
        isinstance(options, list)
        and 2 <= len(options) <= 26
        and all(isinstance(o, str) and o.strip() for o in options)
    )


def _find_phases(folder: Path, row: int, problems: list[RowProblem]) -> dict[str, Path]:
    ct = folder / "ct"
    found: dict[str, Path] = {}
    entries = sorted(p for p in ct.iterdir() if not p.name.startswith(".")) if ct.is_dir() else []
    for entry in entries:
        phase = _phase_name(entry)
        if phase is None:
            continue
        if phase not in PHASES:
            problems.append(
                RowProblem(
                    row,
                    "ct",
                    f"unknown phase {entry.name!r}; expected {', '.join(PHASES)}",
                    "bad_ct",
                )
            )
        elif phase in found:
            problems.append(
                RowProblem(
                    row,
                    "ct",
                    f"phase {phase} given twice ({found[phase].name}, {entry.name})",
                    "bad_ct",
                )
            )
        else:
            found[phase] = entry
    if not found:
        problems.append(
            RowProblem(
                row, "ct", f"no CT in {folder.name}/ct/ (<phase>/ or <phase>.nii.gz)", "bad_ct"
            )
        )
    return found


def _phase_name(entry: Path) -> str | None:
    if entry.is_dir():
        return entry.name
    for suffix in NIFTI_SUFFIXES:
        if entry.name.endswith(suffix):
            return entry.name[: -len(suffix)]
    return None  # stray files (notes, checksums) are not phases


def _find_endoscopy(folder: Path, row: int, problems: list[RowProblem]) -> Path | None:
    found = [folder / name for name in ENDOSCOPY_NAMES if (folder / name).is_file()]
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        problems.append(
            RowProblem(row, "endoscopy", f"several endoscopy images ({names})", "bad_endoscopy")
        )
    return found[0] if found else None


def all_problems(cases: Sequence[CaseData]) -> list[RowProblem]:
    """Every problem of every case, in case order (for an all-or-nothing import report)."""
    return [problem for case in cases for problem in case.problems]
