"""Every import family exports a release that loads the way VLMEvalKit loads it.

Each family's file is imported (`benchmark_import`), released with `manage.py export_release
--version`, and each release TSV is loaded as VLMEvalKit's `ImageBaseDataset` does (pandas'
defaults, image reuse cells resolved, list cells, `image_path` cells, every image decoded with
Pillow and written where `dump_image` writes it) and prompted as `ImageMCQDataset.build_prompt`
(and, for MedQ-DEG, `MedQDEGBenchDataset.build_prompt`) does. The loading code below is written
from VLMEvalKit's source at VLMEVAL_COMMIT; it is the test's own, independent of our exporter.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import string
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from PIL import Image as PILImage

from annotations.services.imports import benchmark_import
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.formats.builders import b64, jpeg_bytes, png_bytes, write_tsv

pytestmark = pytest.mark.django_db

VLMEVAL_HEADER = ["index", "image", "question", "hint", "A", "B", "C", "D", "answer",
                  "category", "l2-category", "split"]  # fmt: skip
MEDQ_HEADER = ["index", "image", "question", "A", "B", "C", "D", "E", "answer", "modality",
               "degradation_type", "degradation_severity", "source"]  # fmt: skip


# --- VLMEvalKit's way of loading and prompting (ImageBaseDataset, ImageMCQDataset) -----------


def as_list(cell: object) -> list[str]:
    """`toliststr`: a "[...]" cell is a list literal, any other text one value."""
    if isinstance(cell, str) and len(cell) > 1 and cell[0] == "[" and cell[-1] == "]":
        return [str(value) for value in ast.literal_eval(cell)]
    if isinstance(cell, str):
        return [cell]
    raise TypeError(f"VLMEvalKit cannot read the cell {cell!r}")  # NaN: its NotImplementedError


def vlmeval_load(path: Path) -> pd.DataFrame:
    data = pd.read_csv(path, sep="\t")
    data = data[~pd.isna(data["image"])].copy()
    data["index"] = [str(value) for value in data["index"]]
    cells = {
        index: "" if pd.isna(cell) else str(cell)
        for index, cell in zip(data["index"], data["image"], strict=True)
    }
    for index, cell in list(cells.items()):
        if 0 < len(cell) <= 64:  # a reuse cell: the index of a row holding the image
            assert cell in cells and len(cells[cell]) > 64, f"row {index}: bad reuse cell"
            cells[index] = cells[cell]
    images = [as_list(cells[index]) for index in data["index"]]
    data["image"] = [values[0] if len(values) == 1 else values for values in images]
    if "image_path" in data:
        paths = [as_list(cell) for cell in data["image_path"]]
        data["image_path"] = [values[0] if len(values) == 1 else values for values in paths]
    data["index"] = [int(value) for value in data["index"]]
    return data


def dump_images(row: pd.Series, root: Path) -> list[bytes]:
    """`dump_image`: decode each image (RGBA/P/LA made RGB) and save it where VLMEvalKit does;
    returns the decoded base64 bytes."""
    images = row["image"] if isinstance(row["image"], list) else [row["image"]]
    if isinstance(row["image"], list):
        names = row.get("image_path", [f"{row['index']}_{i}.png" for i in range(len(images))])
    elif "image_path" in row:
        assert isinstance(row["image_path"], str)
        names = [row["image_path"]]
    else:
        names = [f"{row['index']}.png"]
    raw = []
    for cell, name in zip(images, names, strict=True):
        data = base64.b64decode(cell)
        with PILImage.open(io.BytesIO(data)) as image:
            decoded = image.convert("RGB") if image.mode in ("RGBA", "P", "LA") else image
            target = (root / name).resolve()
            assert target.is_relative_to(root.resolve()), f"{name} leaves the image folder"
            target.parent.mkdir(parents=True, exist_ok=True)
            decoded.save(target)
        raw.append(data)
    return raw


def mcq_prompt(row: pd.Series) -> str:
    options = {c: row[c] for c in string.ascii_uppercase if c in row and not pd.isna(row[c])}
    prompt = f"Hint: {row['hint']}\n" if "hint" in row and not pd.isna(row["hint"]) else ""
    prompt += f"Question: {row['question']}\n"
    if options:
        prompt += "Options:\n" + "".join(f"{key}. {text}\n" for key, text in options.items())
        prompt += "Please select the correct answer from the options above. \n"
    return prompt


def medqdeg_prompt(row: pd.Series) -> str:
    options = {
        c: str(row[c]).strip()
        for c in "ABCDE"
        if c in row and pd.notna(row[c]) and str(row[c]).strip()
    }
    option_text = "\n".join(f"{key}. {text}" for key, text in options.items())
    return (
        f"{row['question']}\n\n{option_text}\n\n"
        "Answer with the option letter from the given choices directly."
    )


def loaded(path: Path, root: Path) -> dict[int, tuple[str, str, list[bytes]]]:
    """index -> (generic prompt, MedQ-DEG prompt, image bytes) of a TSV, VLMEvalKit's way."""
    frame = vlmeval_load(path)
    return {
        row["index"]: (mcq_prompt(row), medqdeg_prompt(row), dump_images(row, root))
        for _, row in frame.iterrows()
    }


# --- the files, the imports, the releases -----------------------------------------------------


def release(tmp_path: Path, source: Path, family: str, name: str) -> Path:
    benchmark_import(path=source, family=family, name=name)
    out = tmp_path / f"release-{name}"
    call_command(
        "export_release", name, "--version", "1.0", "--all", "--out", str(out), verbosity=0
    )
    return out / f"{name}.tsv"


def rgba_png() -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGBA", (20, 16), (10, 200, 30, 128)).save(buffer, format="PNG")
    return buffer.getvalue()


def endobench_rows() -> list[list[str]]:
    frame, other = jpeg_bytes("red"), jpeg_bytes("green")
    rows = [ENDO_HEADER, endo_row(1, b64(frame)), endo_row(2, "1", "C"), endo_row(3, b64(other))]
    rows[3][3] = 'Which "landmark"\tis seen\nhere?'
    rows[2][-2] = "Fundus, retroflexed"  # E holds an option on one row only
    return rows


def endobench_json(folder: Path) -> Path:
    """The EndoBench rows as the published JSON: images in EndoBench-Images/, options a list."""
    header, *rows = endobench_rows()
    images = {1: jpeg_bytes("red"), 2: jpeg_bytes("red"), 3: jpeg_bytes("green")}
    (folder / "EndoBench-Images").mkdir(parents=True)
    items = []
    for row in rows:
        cells = dict(zip(header, row, strict=True))
        index = int(cells["index"])
        (folder / "EndoBench-Images" / cells["image_path"]).write_bytes(images[index])
        options = [cells[letter] for letter in "ABCDEF" if cells[letter]]
        items.append(
            {"id": index, "options": options, "image_path": cells["image_path"]}
            | {
                key: cells[key]
                for key in (
                    "question",
                    "answer",
                    "gt",
                    "category",
                    "task",
                    "subtask",
                    "scene",
                    "dataset",
                )
            }  # fmt: skip
        )
    path = folder / "EndoBench.json"
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path


def vlmeval_rows() -> list[list[str]]:
    pair = f"['{b64(jpeg_bytes('navy'))}', '{b64(png_bytes('white'))}']"
    return [
        VLMEVAL_HEADER,
        ["10", b64(jpeg_bytes("red")), "What is shown?", "Look at the fundus", "Polyp", "Ulcer",
         "Bleeding", "Normal", "A", "lesion", "perception", "dev"],
        ["11", "10", 'A "quoted"\ttab and\nnewline?', "", "Polyp", "Ulcer", "Bleeding", "",
         "B", "lesion", "perception", "test"],
        ["12", b64(rgba_png()), "Which organ?", "", "Liver", "Kidney", "", "", "A", "organ",
         "reasoning", "test"],
        ["13", pair, "Do the two phases differ?", "", "Yes", "No", "", "", "B", "organ",
         "reasoning", "dev"],
    ]  # fmt: skip


def medqdeg_rows() -> list[list[str]]:
    def row(index, modality, kind, severity, image):
        return [str(index), b64(image), f"Which organ is in image {index}?", " Liver ",
                "Kidney", "Spleen", "", "", "A", modality, kind, severity, "synthetic"]  # fmt: skip

    return [
        MEDQ_HEADER,
        row(1, "CT", "", "clean", png_bytes("gray")),
        row(2, "CT", "low_dose", "mild", jpeg_bytes("gray")),
        row(3, "Ultrasound", "low_dose", "severe", jpeg_bytes("black")),  # imported, warned
    ]


@pytest.mark.parametrize(
    ("family", "rows"),
    [("vlmeval", vlmeval_rows), ("endobench", endobench_rows), ("medqdeg", medqdeg_rows)],
)
def test_a_tsv_import_releases_a_tsv_vlmevalkit_loads_with_the_same_prompts(tmp_path, family, rows):
    source = write_tsv(tmp_path / f"{family}.tsv", rows())
    released = release(tmp_path, source, family, f"Fidelity-{family}")

    expected = loaded(source, tmp_path / "images-source")
    got = loaded(released, tmp_path / "images-release")

    assert got == expected
    assert len(got) == len(rows()) - 1
    source_frame, release_frame = pd.read_csv(source, sep="\t"), pd.read_csv(released, sep="\t")
    kept = [c for c in source_frame.columns if c not in ("image", "category", "l2-category")]
    pd.testing.assert_frame_equal(release_frame[kept], source_frame[kept])


def test_an_endobench_json_import_releases_the_tsv_the_same_content_gives(tmp_path):
    from_tsv = release(
        tmp_path, write_tsv(tmp_path / "endo.tsv", endobench_rows()), "endobench", "EndoTsv"
    )
    from_json = release(tmp_path, endobench_json(tmp_path / "json"), "endobench", "EndoJson")

    json_frame = pd.read_csv(from_json, sep="\t")
    for column in ("index", "image", "question", "answer", "A", "B", "C", "D", "E", "F"):
        assert column in json_frame.columns
    assert list(json_frame.columns) == list(pd.read_csv(from_tsv, sep="\t").columns)

    expected = loaded(from_tsv, tmp_path / "images-tsv")
    got = loaded(from_json, tmp_path / "images-json")
    assert got == expected
    assert [prompt for prompt, _medq, _images in got.values()][1] == (
        "Question: Which landmark is seen in frame 2?\nOptions:\nA. Cecum\nB. Pylorus\n"
        "C. Z-line\nD. Duodenal bulb\nE. Fundus, retroflexed\n"
        "Please select the correct answer from the options above. \n"
    )
    pd.testing.assert_frame_equal(
        vlmeval_load(from_json).drop(columns="image"), vlmeval_load(from_tsv).drop(columns="image")
    )
