"""The items of a release's NAME.json, one at a time, from an item row and its provenance."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from annotations.formats.taskfiles import public_target


def json_item(
    item: Any,
    refs: Sequence[Any],
    chunk: Any,
    *,
    withhold: bool,
    pair_fields: Callable[[Any], Mapping[str, Any]],
) -> dict[str, Any]:
    """One item of NAME.json: `item` an item row, `refs` its images, `chunk` its provenance
    (`services.releases.provenance.ChunkProvenance`), `pair_fields(item)` its pair keys. A
    withheld item carries no answer (that goes to the answer key)."""
    data = {
        "index": item.source_index,
        "question": item.question,
        "hint": item.hint,
        "options": list(item.options),
        "answer": item.answer,
        "answer_text": item.answer_text,
        "taxonomy": item.taxonomy(),
        "extra": item.extra,
        "status": item.status,
        "revision": item.version,
        "images": [ref.sha256 for ref in refs],
        "source": {
            "benchmark": item.benchmark.name,
            "index": item.source_index,
            "dataset": item.dataset,
            "source": item.source,
            "case_id": item.case_code,
        },
        "revisions": chunk.revisions.get(item.id, []),
        "reviews": chunk.review_summary(item.id),
        "adjudication": chunk.adjudications.get(item.id),
        "boxes": chunk.boxes(item, refs),
        "volumes": chunk.volumes(item),
        "degradation": _degradation(item, pair_fields),
    }
    if item.kind != "mcq":
        data.update(kind=item.kind, reference=item.reference, target=item.target)
    if withhold:
        data["answer"] = data["answer_text"] = None
        data["extra"] = {k: v for k, v in item.extra.items() if k != "gt"}
        data["withheld"] = True
        if item.kind != "mcq":
            _withhold_task(data, item)
    return data


def _withhold_task(data: dict, item: Any) -> None:
    """A withheld open item keeps no reference, a box item no box, a retrieval pair no case."""
    if item.kind == "open":
        data["reference"] = None
    elif item.kind == "box":
        data["target"] = public_target(item.target)
    elif item.kind == "retrieval":
        data.update(images=[], boxes=[], volumes=[])
        data["source"]["case_id"] = None
        data["extra"].pop("case_id", None)


def _degradation(item: Any, pair_fields: Callable[[Any], Mapping[str, Any]]) -> dict | None:
    if not (item.degradation_type or item.degradation_severity or item.clean_twin_id):
        return None
    pair = pair_fields(item)
    return {
        "type": item.degradation_type,
        "severity": item.degradation_severity,
        "params": pair["degradation_params"],
        "seed": pair["degradation_seed"],
        "clean_index": pair["clean_index"],
        "pair_id": pair["pair_id"],
    }
