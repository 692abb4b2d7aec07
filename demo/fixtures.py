"""The small sample files in `fixtures/`, one set per import family, for trying an import by hand
and for the test that imports each (tests/test_fixtures.py).

    python -m demo.fixtures fixtures

writes them again, byte for byte (fixed seed, deterministic DICOM UIDs, fixed zip times).
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from annotations.formats.vlmeval import write_mcq_tsv
from demo.endobench import endobench_rows, write_endobench_tsv
from demo.gastricx import write_gastricx_cases
from demo.medqdeg import write_medqdeg_tsv

SEED = 11
VLMEVAL_COLUMNS = ["index", "image", "question", "A", "B", "C", "D", "answer", "category"]
VLMEVAL_COLUMNS += ["l2-category", "split"]
FIXED_ZIP_TIME = (2026, 1, 1, 0, 0, 0)
FIXTURE_CT_SHAPE = (8, 64, 64)  # (z, y, x): small, but every phase and box is there


@dataclass(frozen=True)
class Fixtures:
    vlmeval_tsv: Path
    endobench_tsv: Path
    endobench_json: Path
    medqdeg_tsv: Path
    gastricx_zip: Path

    def by_family(self) -> list[tuple[str, Path]]:
        """(family, path) for each sample file, as `import_benchmark PATH --family` takes them."""
        return [
            ("vlmeval", self.vlmeval_tsv),
            ("endobench", self.endobench_tsv),
            ("endobench", self.endobench_json),
            ("medqdeg", self.medqdeg_tsv),
            ("gastricx", self.gastricx_zip),
        ]


def write_fixtures(root: Path) -> Fixtures:
    """Write every sample file under `root` (created if missing) and say where."""
    root = Path(root)
    return Fixtures(
        vlmeval_tsv=_write_vlmeval(root / "vlmeval" / "sample_mcq.tsv"),
        endobench_tsv=write_endobench_tsv(
            root / "endobench" / "EndoBench_sample.tsv", seed=SEED, n_items=3
        ),
        endobench_json=_write_endobench_json(root / "endobench-json" / "EndoBench_sample.json"),
        medqdeg_tsv=write_medqdeg_tsv(
            root / "medqdeg" / "MedQDEG_sample.tsv", seed=SEED, n_items=4
        ),
        gastricx_zip=_write_gastricx_zip(root / "gastricx" / "gastricx_sample.zip"),
    )


def _write_vlmeval(path: Path) -> Path:
    # A plain VLMEvalKit MCQ file: EndoBench's questions in the generic columns, A-D only.
    rows = [
        {
            "index": row["index"],
            "image": row["image"],
            "question": row["question"],
            **{letter: row[letter] for letter in "ABCD"},
            "answer": row["answer"],
            "category": row["category"],
            "l2-category": row["task"],
            "split": "test",
        }
        for row in endobench_rows(seed=SEED + 1, n_items=3)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        write_mcq_tsv(out, VLMEVAL_COLUMNS, rows)
    return path


def _write_endobench_json(path: Path) -> Path:
    # EndoBench's JSON release: an array of items, images as files beside it (FORMATS.md).
    items = []
    for row in endobench_rows(seed=SEED + 2, n_items=3):
        image_path = str(row["image_path"])
        if isinstance(row["image"], bytes):  # else it reuses an earlier row's file
            target = path.parent / image_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(row["image"])
        options = [row[letter] for letter in "ABCDEF" if row[letter]]
        keys = ("question", "answer", "gt", "category", "task", "subtask", "scene", "dataset")
        items.append({"id": row["index"], "options": options, "image_path": image_path})
        items[-1].update({key: row[key] for key in keys})
    path.write_text(json.dumps(items, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _write_gastricx_zip(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        root = write_gastricx_cases(Path(folder), seed=SEED, n_cases=1, ct_shape=FIXTURE_CT_SHAPE)
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(p for p in root.rglob("*") if p.is_file()):
                entry = zipfile.ZipInfo(file.relative_to(root).as_posix(), FIXED_ZIP_TIME)
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, file.read_bytes())
    return path


if __name__ == "__main__":
    written = write_fixtures(Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures"))
    for family, file in written.by_family():
        print(f"{family:10} {file}")
