"""manifest.json: what a release is, made only of its data so that a rebuild gives the same bytes.

Who built it and when are kept on the Release row (and shown with it), not in the files: the same
items, filter, name and version always give byte-identical files, manifest included.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotations.services.releases.export import _Export

SCHEMA_VERSION = 2
BOX_CONVENTION = (
    "2D boxes: pixels [x0, y0, x1, y1] of the image, end exclusive (COCO bbox = [x0, y0, w, h]). "
    "3D boxes: voxel index ranges [x0, y0, z0, x1, y1, z1], x = column, y = row, z = slice sorted "
    "by ascending position along the slice normal, end exclusive; mm corners are patient LPS "
    "coordinates (origin + direction . (index * spacing)) of the centres of voxels (x0, y0, z0) "
    "and (x1-1, y1-1, z1-1)."
)


def _sorted(counter) -> dict:
    return dict(sorted(counter.items()))


def _layout(export: _Export) -> dict:
    name = export.name
    layout: dict = {"tsv": f"{name}.tsv", "json": f"{name}.json"}
    if export.local is not None:
        layout["local"] = {
            "tsv": f"{name}_local.tsv",
            "images": "images/",
            "image_path_relative_to": "images/",
            "image_files": export.payloads.files_written + export.digester.links["files"],
            "image_bytes": export.payloads.bytes_written + export.digester.links["bytes"],
        }
    if export.parts:
        layout["parts"] = [
            {"tsv": part.path.name, "rows": part.rows, "bytes": part.out.size}
            for part in export.parts
        ]
    if export.test is not None:
        layout["test"] = {
            "split": export.options.withhold_split,
            "tsv": export.test.path.name,
            "rows": export.test.rows,
            "answer_key": f"{name}_test_answers.json",
        }
    if export.options.coco:
        layout["coco"] = f"{name}_coco.json"
    return layout


def write_manifest(export: _Export) -> dict:
    """Write manifest.json into the export's folder and return it."""
    tally = export.tally
    counts = {"category": _sorted(tally.category), "split": _sorted(tally.split)}
    manifest = {
        "name": export.name,
        "version": export.options.version,
        "benchmark": export.benchmark.name,
        "family": export.benchmark.family,
        "schema_version": SCHEMA_VERSION,
        "selection": {
            "include_all": export.include_all,
            "filters": export.filters,
            "withhold_split": export.options.withhold_split,
        },
        "items": tally.total,
        "items_sha256": tally.items_sha256.hexdigest(),
        "counts": counts,
        "columns": export.main.columns,
        "taxonomy": export.benchmark.taxonomy,
        "box_convention": BOX_CONVENTION,
        "layout": _layout(export),
        "files": {
            output.path.name: output.digests()
            for output in sorted(export.outputs, key=lambda output: output.path.name)
        },
    }
    if export.report is not None:
        counts["l2-category"] = _sorted(tally.l2_category)
        manifest["report_columns"] = {
            "category": export.report.category,
            "l2-category": export.report.l2_category,
        }
    with open(export.folder / "manifest.json", "w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")
    return manifest
