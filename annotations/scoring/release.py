"""Score predictions against a release folder alone: no Django, no database.

`python -m annotations.scoring RELEASE_DIR PREDICTIONS` (see `__main__`) prints what
`run_model --out` writes for the run that made the predictions: `overall` (VLMEvalKit's
accuracy over the multiple-choice rows), `tasks` (Gastric-X's five tasks, exactly its keys) and
`task_details` (their breakdowns), to the last digit: every reply is read again by the same
rules (`scoring.reading`) and every figure computed by the same functions (`scoring.tasks`),
with the run's bootstrap seed.

API:
- `load_release(folder) -> Release`: the items of NAME.json, the withheld answers of
  NAME_test_answers.json, the slices of NAME_localization.json and the cases of
  NAME_retrieval.json.
- `load_predictions(path) -> (rows, seed)`: the JSON `run_model --out` writes (its
  `predictions` and `seed`), or JSON lines, one prediction a line (seed None).
- `score(release, rows, *, seed=0, resamples=1000) -> {"overall", "tasks", "task_details"}`.

A prediction row: `index` (the item's), `prediction` (the reply text), and where they apply
`error` (the item failed: unanswered), `judge_letter` (a judge model's letter, taken instead of
reading the reply), `box` and `slice_boxes` (localization: the parsed box, and per slice asked
`{"z": box or null}`), `report_to_case_rank` and `case_to_report_rank` (retrieval). Replies to
NAME_localization.tsv's rows (VLMEvalKit's predictions of it: `index`, `prediction`) are read
into `box` / `slice_boxes` as runs read them.
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotations.inference.boxparse import box_number, parse_box
from annotations.inference.task_prompts import REPORT_KINDS, box_slices
from annotations.scoring.accuracy import Score, breakdown
from annotations.scoring.bootstrap import DEFAULT_RESAMPLES
from annotations.scoring.boxes import box3d_from_slice_boxes, box_on_slice
from annotations.scoring.coco import SliceOutcome, target_slices
from annotations.scoring.reading import read_reply
from annotations.scoring.retrieval import CrossModalRanks
from annotations.scoring.tasks import (
    BoxOutcome,
    ChoiceOutcome,
    ReportOutcome,
    issue_keys,
    run_tasks_block,
)

__all__ = ["Release", "ReleaseError", "load_predictions", "load_release", "score"]

TASK_OF_KIND = {
    "mcq": "vqa",
    "label": "classification",
    "open": "report_generation",
    "box": "localization",
    "retrieval": "retrieval",
}


class ReleaseError(ValueError):
    """A release folder or predictions file that cannot be scored (the message says why)."""


@dataclass
class Release:
    name: str
    family: str
    items: dict[int, dict[str, Any]]
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)
    slices: dict[int, list[int]] = field(default_factory=dict)
    case_of_pair: dict[int, str] = field(default_factory=dict)
    # Localization: (width, height, slices in the volume) of the images an item is asked on.
    sizes: dict[int, tuple[int, int, int]] = field(default_factory=dict)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{path} is missing") from None
    except json.JSONDecodeError as error:
        raise ReleaseError(f"{path} is not JSON: {error}") from None


def load_release(folder: Path | str) -> Release:
    folder = Path(folder)
    manifest = _read_json(folder / "manifest.json")
    name, family = manifest["name"], manifest["family"]
    items = {int(i["index"]): i for i in _read_json(folder / f"{name}.json")["items"]}
    release = Release(name, family, items)
    answers = folder / f"{name}_test_answers.json"
    if answers.exists():
        release.answers = {int(a["index"]): a for a in _read_json(answers)["answers"]}
    localization = folder / f"{name}_localization.json"
    if localization.exists():
        document = _read_json(localization)
        for entry in document["items"]:
            if "slices" in entry:
                release.slices[int(entry["index"])] = list(entry["slices"])
        images = {image["id"]: image for image in document["images"]}
        for box in document["annotations"]:
            image = images[box["image_id"]]
            release.sizes[int(box["item_index"])] = (image["width"], image["height"], 0)
        for box in document["boxes_3d"]:
            size_z, height, width = box["shape_zyx"]
            release.sizes[int(box["item_index"])] = (width, height, size_z)
    retrieval = folder / f"{name}_retrieval.json"
    if retrieval.exists():
        for pair in _read_json(retrieval)["pairs"]:
            if pair.get("case_id"):
                release.case_of_pair[int(pair["index"])] = pair["case_id"]
    for index, answer in release.answers.items():
        if "slices" in answer:
            release.slices[index] = list(answer["slices"])
        if answer.get("kind") == "retrieval" and answer.get("case_id"):
            release.case_of_pair[index] = answer["case_id"]
    return release


def load_predictions(path: Path | str) -> tuple[list[dict[str, Any]], int | None]:
    """The prediction rows and the run's bootstrap seed (None for JSON lines)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict) and "predictions" in document:
        return list(document["predictions"]), document.get("seed")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ReleaseError(f"{path} line {number} is not JSON: {error}") from None
    return rows, None


def _lettered(options: Sequence[Any]) -> dict[str, str]:
    return {
        letter: text for letter, text in zip(string.ascii_uppercase, options, strict=False) if text
    }


def _truth(release: Release, index: int, item: Mapping[str, Any], key: str) -> Any:
    """An item's answer (`key` of NAME.json), or its withheld answer from the answer key."""
    if not item.get("withheld"):
        return item.get(key)
    answer = release.answers.get(index)
    if answer is None:
        raise ReleaseError(f"item {index} is withheld and the release has no answer for it")
    return answer


def _report_kind(item: Mapping[str, Any]) -> str:
    target = item.get("target") or {}
    task = (item.get("taxonomy") or {}).get("task")
    for value in (target.get("report"), target.get("kind"), task):
        if value in REPORT_KINDS:
            return str(value)
    return "diagnostic"


@dataclass
class _Found:
    records: list[dict[str, Any]] = field(default_factory=list)  # choice rows: hit
    vqa: list[ChoiceOutcome] = field(default_factory=list)
    classification: list[ChoiceOutcome] = field(default_factory=list)
    label_sets: dict[str, list[str]] = field(default_factory=dict)
    reports: list[ReportOutcome] = field(default_factory=list)
    boxes: list[BoxOutcome] = field(default_factory=list)
    on_slices: list[BoxOutcome] = field(default_factory=list)
    asked: list[SliceOutcome] = field(default_factory=list)
    pairs: list[tuple[str, int, int]] = field(default_factory=list)
    answered: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(TASK_OF_KIND.values(), 0)
    )


def _choice(release: Release, index: int, item: dict, row: dict, found: _Found) -> None:
    kind = item.get("kind", "mcq")
    options = _lettered(item.get("options") or [])
    truth = _truth(release, index, item, "answer")
    gold = truth["answer"] if isinstance(truth, dict) else truth
    if row.get("error"):
        letter, hit = "", False
    elif "judge_letter" in row:  # a judge model's letter, where the run asked one
        letter = row["judge_letter"] or ""
        hit = letter == gold
    else:
        reading = read_reply(
            family=release.family, reply=row.get("prediction") or "", options=options, answer=gold
        )
        letter, hit = reading.letter, reading.hit
    found.records.append({"hit": hit})
    if kind == "label":
        field_name = str((item.get("target") or {}).get("field") or "label")
        labels = list(item.get("options") or [])
        found.label_sets.setdefault(field_name, labels)
        label = options.get(letter, "")
        found.classification.append(ChoiceOutcome(options[gold], label or None, field_name))
    else:
        found.vqa.append(ChoiceOutcome(gold, letter or None))


def _box(release: Release, index: int, item: dict, row: dict, found: _Found) -> None:
    truth_source = _truth(release, index, item, "target")
    if item.get("withheld"):
        box_3d = truth_source.get("box_3d") or {}
        truth = box_3d.get("voxel") or truth_source.get("box")
    else:
        truth = (truth_source or {}).get("voxel") or (truth_source or {}).get("box")
    if not (isinstance(truth, list) and len(truth) in (4, 6)):
        return
    truth = [float(v) for v in truth]
    failed = bool(row.get("error"))
    box = None if failed else row.get("box")
    slice_boxes = None if failed else row.get("slice_boxes")
    found.boxes.append(BoxOutcome(truth, box))
    for z, answer in (slice_boxes or {}).items():  # as the run scores each slice crossed
        section = box_on_slice(truth, int(z)) if len(truth) == 6 else None
        if section is not None:
            found.on_slices.append(BoxOutcome(section, answer))
    if len(truth) == 6 and index not in release.slices:
        raise ReleaseError(f"localization item {index} has no slices in the release")
    found.asked += target_slices(index, truth, box, slice_boxes, release.slices.get(index, ()))


def _with_boxes(release: Release, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows, each localization item's replies to NAME_localization.tsv's rows (index: the
    item's x 10000 + slice; a 2D item: its own) read into its `box` / `slice_boxes` as runs read
    them (`parse_box`, slices joined by `box3d_from_slice_boxes`); rows that carry them kept."""
    kept: list[dict[str, Any]] = []
    replies: dict[int, dict[int, str]] = {}
    for row in rows:
        index = int(row["index"])
        item = release.items.get(index)
        if item is None and release.items.get(index // 10000, {}).get("kind") == "box":
            replies.setdefault(index // 10000, {})[index % 10000] = row.get("prediction") or ""
        elif item is not None and item.get("kind") == "box" and "box" not in row:
            replies.setdefault(index, {})[-1] = row.get("prediction") or ""
        else:
            kept.append(dict(row))
    for index, by_slice in sorted(replies.items()):
        if index not in release.sizes:
            raise ReleaseError(f"localization item {index}: the release has no image size for it")
        kept.append({"index": index, "prediction": "", **_read_boxes(release, index, by_slice)})
    return kept


def _read_boxes(release: Release, index: int, replies: dict[int, str]) -> dict[str, Any]:
    width, height, size_z = release.sizes[index]

    def read(text: str | None) -> list[float | int] | None:
        parsed = parse_box(text, width=width, height=height)
        return [box_number(v) for v in parsed.box] if parsed else None

    if -1 in replies:
        return {"box": read(replies[-1])}
    slices = release.slices[index]
    truth = (release.items[index].get("target") or {}).get("voxel") or []
    boxes = {str(z): read(replies.get(z)) for z in slices}
    spans = box_slices(int(truth[2]), int(math.ceil(truth[5])), size_z)[1]
    spread = {
        z: boxes[str(s)]
        for s, (start, end) in zip(slices, spans, strict=True)
        for z in range(start, end)
    }
    joined = box3d_from_slice_boxes(spread)
    return {"box": [box_number(v) for v in joined] if joined else None, "slice_boxes": boxes}


def _collect(release: Release, rows: Sequence[Mapping[str, Any]]) -> _Found:
    found = _Found()
    for row in sorted(_with_boxes(release, rows), key=lambda r: int(r["index"])):
        index = int(row["index"])
        item = release.items.get(index)
        if item is None:
            raise ReleaseError(f"prediction for index {index}: no such item in {release.name}")
        kind = item.get("kind", "mcq")
        found.answered[TASK_OF_KIND[kind]] += not row.get("error")
        if kind in ("mcq", "label"):
            _choice(release, index, item, dict(row), found)
        elif kind == "open":
            reference = _truth(release, index, item, "reference")
            reference = reference["answer"] if isinstance(reference, dict) else reference
            text = row.get("prediction") or ""
            generated = text if not row.get("error") and text.strip() else None
            found.reports.append(ReportOutcome(reference, generated, _report_kind(item)))
        elif kind == "box":
            _box(release, index, item, dict(row), found)
        elif kind == "retrieval" and not row.get("error"):
            to_case, to_report = row.get("report_to_case_rank"), row.get("case_to_report_rank")
            if to_case is not None and to_report is not None:
                if index not in release.case_of_pair:
                    raise ReleaseError(f"retrieval pair {index} has no case in the release")
                found.pairs.append((release.case_of_pair[index], int(to_case), int(to_report)))
    return found


def _ranks(pairs: list[tuple[str, int, int]]) -> CrossModalRanks | None:
    """The run's ranks as `cross_modal_ranks` gave them: cases in the order of their codes."""
    if not pairs:
        return None
    cases = sorted({case for case, _r, _c in pairs})
    position = {case: number for number, case in enumerate(cases)}
    case_rank: dict[int, int] = {}
    for case, _to_case, to_report in pairs:
        case_rank.setdefault(position[case], to_report)
    queried = sorted(case_rank)
    return CrossModalRanks(
        report_to_case=tuple(to_case for _case, to_case, _c in pairs),
        report_case=tuple(position[case] for case, _r, _c in pairs),
        case_to_report=tuple(case_rank[q] for q in queried),
        queried_cases=tuple(queried),
    )


def score(
    release: Release,
    rows: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
) -> dict[str, Any]:
    """`overall`, `tasks` and `task_details` as `run_model --out` writes them."""
    found = _collect(release, rows)
    tasks = run_tasks_block(
        vqa=found.vqa,
        classification=found.classification,
        label_sets=found.label_sets,
        reports=found.reports,
        localization=found.boxes,
        asked=found.asked,
        on_slices=found.on_slices,
        retrieval=_ranks(found.pairs),
        answered=found.answered,
        resamples=resamples,
        seed=seed,
    )
    overall = breakdown(found.records, ())["overall"]
    assert isinstance(overall, Score)
    return {
        "overall": overall.accuracy if overall.n else None,
        "tasks": issue_keys(tasks),
        "task_details": tasks,
    }
