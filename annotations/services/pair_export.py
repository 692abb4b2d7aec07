"""The pair columns of a release: which clean item a degraded twin was made from, and how.

MedQ-DEG's published TSV has no key from a degraded item to its clean one; ours adds
`clean_index` (the clean item's index in the same file) and `pair_id` (the same key qualified by
the benchmark, unique when TSVs of several benchmarks are concatenated). The release writer adds
`PAIR_TSV_COLUMNS` that its benchmark lacks, updates each row with `pair_tsv_fields(item)` and each
JSON item with `pair_json_fields(item)`; it should `select_related("clean_twin")` to stay at a
constant number of queries.
"""

from __future__ import annotations

from annotations.models import Item, Severity

PAIR_TSV_COLUMNS = (
    "modality",
    "degradation_type",
    "degradation_severity",
    "source",
    "clean_index",
    "pair_id",
)


def clean_index_of(item: Item) -> int | None:
    """The index of the clean item of this item's pair group (itself if it is the clean one)."""
    if item.clean_twin is not None:
        return item.clean_twin.source_index
    if item.degradation_severity == Severity.CLEAN:
        return item.source_index
    return None


def pair_tsv_fields(item: Item) -> dict[str, object]:
    """Extra TSV cells for an item; empty strings for an item outside any pair."""
    clean_index = clean_index_of(item)
    return {
        "modality": item.modality,
        "degradation_type": item.degradation_type,
        "degradation_severity": item.degradation_severity,
        "source": item.source,
        "clean_index": "" if clean_index is None else clean_index,
        "pair_id": "" if clean_index is None else f"{item.benchmark.name}:{clean_index}",
    }


def pair_json_fields(item: Item) -> dict[str, object]:
    """Extra JSON fields: the pair keys and the exact parameters and seed of a degraded image."""
    tsv = pair_tsv_fields(item)
    return {
        "clean_index": tsv["clean_index"] if tsv["clean_index"] != "" else None,
        "pair_id": tsv["pair_id"] or None,
        "degradation_params": item.degradation_params,
        "degradation_seed": item.degradation_seed,
    }
