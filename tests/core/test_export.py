from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from annotations.models import Item, ItemStatus
from annotations.services.imports import benchmark_import
from annotations.services.releases import release_export
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, jpeg_bytes, png_bytes, write_tsv

pytestmark = pytest.mark.django_db

MEDQ_HEADER = [
    "index",
    "image",
    "question",
    "A",
    "B",
    "C",
    "D",
    "E",
    "answer",
    "modality",
    "degradation_type",
    "degradation_severity",
    "source",
]


def resolve_reuse(frame: pd.DataFrame) -> pd.DataFrame:
    """Resolve image reuse cells the way VLMEvalKit does when it loads a TSV."""
    frame = frame.copy()
    by_index = dict(zip(frame["index"].astype(str), frame["image"], strict=True))
    frame["image"] = [
        by_index[cell] if isinstance(cell, str) and len(cell) <= 64 else cell
        for cell in frame["image"]
    ]
    return frame


def import_and_export(tmp_path: Path, rows, family: str) -> tuple[Path, Path]:
    source = write_tsv(tmp_path / "source.tsv", rows)
    benchmark = benchmark_import(path=source, family=family, name="bench")
    out = tmp_path / "release"
    release_export(benchmark=benchmark, out_dir=out, include_all=True)
    return source, out / "bench.tsv"


def test_an_endobench_round_trip_reads_back_to_the_same_values(tmp_path):
    frame_a, frame_b = jpeg_bytes("red"), jpeg_bytes("navy")
    rows = [
        ENDO_HEADER,
        endo_row(10, b64(frame_a)),
        endo_row(11, "10", "A"),
        endo_row(12, b64(frame_b), "D"),
    ]
    rows[2][3] = 'A question with a "quote",\ttab and\nnewline?'
    source, exported = import_and_export(tmp_path, rows, "endobench")

    original, written = pd.read_csv(source, sep="\t"), pd.read_csv(exported, sep="\t")
    # Every column comes back, plus the `l2-category` VLMEvalKit breaks accuracy down by (the
    # task, for EndoBench), as a versioned release writes it (issue 30: one set of columns).
    assert list(written.columns) == [*original.columns, "l2-category"]
    assert list(written["l2-category"]) == list(original["task"])
    written = written.drop(columns=["l2-category"])
    pd.testing.assert_frame_equal(resolve_reuse(written), resolve_reuse(original))
    # JPEG bytes leave exactly as they came in.
    assert base64.b64decode(written.loc[0, "image"]) == frame_a
    assert written.loc[1, "image"] == "10"  # the shared frame is written once and reused


def test_a_medqdeg_round_trip_reads_back_to_the_same_values(tmp_path):
    rows = [MEDQ_HEADER]
    for index, (modality, image) in enumerate(
        [("CT", png_bytes()), ("Dermoscopy", jpeg_bytes("tan"))], start=1
    ):
        rows.append(
            [
                str(index),
                b64(image),
                f"What does image {index} show?",
                "Normal",
                "Lesion",
                "Nodule",
                "",
                "",
                "B",
                modality,
                "",
                "clean",
                "synthetic",
            ]
        )
    source, exported = import_and_export(tmp_path, rows, "medqdeg")
    original, written = pd.read_csv(source, sep="\t"), pd.read_csv(exported, sep="\t")
    # Every column comes back with its values, plus the columns a versioned release writes too
    # (issue 30: one set of columns): MedQ-DEG's `category` (the modality) and the pair columns.
    added = [c for c in written.columns if c not in original.columns]
    assert added == ["category", "clean_index", "pair_id"]
    assert list(written["category"]) == list(original["modality"])
    assert list(written["clean_index"]) == list(original["index"])  # clean items are their own
    assert list(written["pair_id"]) == ["bench:1", "bench:2"]
    pd.testing.assert_frame_equal(written[list(original.columns)], original)


def test_without_all_only_curated_items_are_exported(tmp_path):
    rows = [
        ENDO_HEADER,
        endo_row(1, b64(jpeg_bytes("red"))),
        endo_row(2, b64(jpeg_bytes("blue"))),
        endo_row(3, b64(jpeg_bytes("green"))),
        endo_row(4, b64(jpeg_bytes("white"))),
    ]
    benchmark = benchmark_import(
        path=write_tsv(tmp_path / "s.tsv", rows), family="endobench", name="bench"
    )
    for index, status in [
        (1, ItemStatus.AGREED),
        (2, ItemStatus.DISPUTED),
        (3, ItemStatus.ADJUDICATED),
        (4, ItemStatus.REJECTED),
    ]:
        Item.objects.filter(benchmark=benchmark, source_index=index).update(status=status)

    result = release_export(benchmark=benchmark, out_dir=tmp_path / "out")

    written = pd.read_csv(tmp_path / "out" / "bench.tsv", sep="\t")
    assert list(written["index"]) == [1, 3]
    assert result.manifest["items"] == 2
    assert result.manifest["counts"]["category"] == {"Landmark": 2}
    items = json.loads((tmp_path / "out" / "bench.json").read_text())["items"]
    assert [(i["index"], i["status"]) for i in items] == [(1, "agreed"), (3, "adjudicated")]
    assert items[0]["options"] == ["Cecum", "Pylorus", "Z-line", "Duodenal bulb", "", ""]


def test_the_manifest_records_the_digests_and_a_rebuild_is_byte_identical(tmp_path):
    import hashlib

    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_bytes("red"))), endo_row(2, "1")]
    benchmark = benchmark_import(
        path=write_tsv(tmp_path / "s.tsv", rows), family="endobench", name="bench"
    )
    first = release_export(benchmark=benchmark, out_dir=tmp_path / "one", include_all=True)
    release_export(benchmark=benchmark, out_dir=tmp_path / "two", include_all=True)

    for name in ("bench.tsv", "bench.json", "manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    tsv_bytes = (tmp_path / "one" / "bench.tsv").read_bytes()
    assert first.manifest["files"]["bench.tsv"]["md5"] == hashlib.md5(tsv_bytes).hexdigest()
    assert first.manifest["files"]["bench.tsv"]["sha256"] == hashlib.sha256(tsv_bytes).hexdigest()


def test_a_failed_export_leaves_no_release_and_no_partial_file(tmp_path, settings):
    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_bytes("red"))), endo_row(2, b64(jpeg_bytes("blue")))]
    benchmark = benchmark_import(
        path=write_tsv(tmp_path / "s.tsv", rows), family="endobench", name="bench"
    )
    # The second image is gone from storage (a broken disk): whichever process reads it, the
    # exporter or the digest worker writing its cell, the export fails.
    second = Item.objects.get(benchmark=benchmark, source_index=2).item_images.get().image
    stored = Path(settings.MEDIA_ROOT) / second.file.name
    kept = stored.read_bytes()
    stored.unlink()
    out = tmp_path / "exports" / "release"
    try:
        with pytest.raises(OSError, match="No such file"):
            release_export(benchmark=benchmark, out_dir=out, include_all=True)
    finally:
        stored.write_bytes(kept)  # stored images are shared by the other tests
    assert not out.exists()
    assert list((tmp_path / "exports").iterdir()) == []  # no temporary folder left behind either


def test_the_command_exports_and_refuses_a_non_empty_folder(tmp_path, capsys):
    rows = [ENDO_HEADER, endo_row(1, b64(jpeg_bytes("red")))]
    benchmark_import(path=write_tsv(tmp_path / "s.tsv", rows), family="endobench", name="bench")
    call_command("export_release", "bench", out=str(tmp_path / "out"), all=True, verbosity=0)
    assert "exported 1 items" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "README.md",  # how to run the release in VLMEvalKit and score it (issue 30)
        "bench.json",
        "bench.tsv",
        "manifest.json",
    ]
    with pytest.raises(CommandError, match="not empty"):
        call_command("export_release", "bench", out=str(tmp_path / "out"), all=True, verbosity=0)
    with pytest.raises(CommandError, match="No benchmark"):
        call_command("export_release", "nope", out=str(tmp_path / "x"), verbosity=0)
    shutil.rmtree(tmp_path / "out")
