from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import SimpleITK as sitk
from PIL import Image

from annotations.imaging.synthct import PHASES
from demo import DemoFiles, build_demo_files
from demo.endobench import ENDOBENCH_COLUMNS, write_endobench_tsv
from demo.medqdeg import MEDQDEG_COLUMNS, MODALITIES, write_medqdeg_tsv

ENDOBENCH_ITEMS = 16
MEDQDEG_ITEMS = 9
LABELS = {"tumor", "lymph_node", "stomach"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoFiles:
    return build_demo_files(
        tmp_path_factory.mktemp("demo"),
        seed=11,
        endobench_items=ENDOBENCH_ITEMS,
        medqdeg_items=MEDQDEG_ITEMS,
        gastricx_cases=1,
    )


def read_tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)


def decode(cell: str) -> Image.Image:
    image = Image.open(io.BytesIO(base64.b64decode(cell, validate=True)))
    image.load()
    return image


def assert_mcq_rows_are_consistent(table: pd.DataFrame, letters: str) -> None:
    assert table["index"].is_unique
    indexes = set(table["index"])
    image_rows = set(table.loc[table["image"].str.len() > 64, "index"])
    for _, row in table.iterrows():
        assert row["answer"] in letters
        assert row[row["answer"]].strip(), f"row {row['index']}: answer points at an empty option"
        filled = [row[letter] for letter in letters if row[letter]]
        assert len(filled) >= 4 and len(set(filled)) == len(filled)
        assert filled == [row[letter] for letter in letters[: len(filled)]]  # no gaps
        if len(row["image"]) <= 64:
            assert row["image"] in indexes and row["image"] in image_rows
        else:
            assert decode(row["image"]).size[0] > 100


def test_it_writes_every_family_where_it_says(demo):
    assert (
        demo.endobench_tsv.name == "EndoBench.tsv" and demo.endobench_tsv.parent.name == "endobench"
    )
    assert demo.medqdeg_tsv.name == "MedQDEG_demo.tsv" and demo.medqdeg_tsv.parent.name == "medqdeg"
    assert demo.endobench_tsv.is_file() and demo.medqdeg_tsv.is_file()
    assert [p.name for p in demo.gastricx_root.iterdir()] == ["GX-DEMO-0001"]


def test_endobench_tsv_has_the_benchmark_columns_and_consistent_answers(demo):
    table = read_tsv(demo.endobench_tsv)
    assert list(table.columns) == ENDOBENCH_COLUMNS
    assert len(table) == ENDOBENCH_ITEMS
    assert_mcq_rows_are_consistent(table, "ABCDEF")
    for _, row in table.iterrows():
        assert row["gt"] == row[row["answer"]]
        assert row["category"] and row["task"] and row["subtask"] and row["dataset"]
    assert (table["image"].str.len() <= 64).any(), "no question reuses another row's frame"
    assert set(table["scene"]) == {"gastroscopy", "colonoscopy", "capsule endoscopy", "surgery"}


def test_endobench_frames_are_jpeg(demo):
    table = read_tsv(demo.endobench_tsv)
    formats = {decode(cell).format for cell in table["image"] if len(cell) > 64}
    assert formats == {"JPEG"}


def test_medqdeg_tsv_holds_clean_images_of_every_modality(demo):
    table = read_tsv(demo.medqdeg_tsv)
    assert list(table.columns) == MEDQDEG_COLUMNS
    assert len(table) == MEDQDEG_ITEMS
    assert_mcq_rows_are_consistent(table, "ABCDE")
    assert set(table["degradation_severity"]) == {"clean"}
    assert set(table["degradation_type"]) == {""}
    assert set(MODALITIES) <= set(table["modality"])
    formats = {
        row["modality"]: decode(row["image"]).format
        for _, row in table.iterrows()
        if len(row["image"]) > 64
    }
    assert formats["CT"] == formats["MRI"] == formats["X-ray"] == formats["Ultrasound"] == "PNG"
    assert formats["Endoscopy"] == formats["Dermoscopy"] == formats["Histopathology"] == "JPEG"


def test_gastricx_case_json_has_every_field_and_boxes_inside_the_ct(demo):
    case = demo.gastricx_root / "GX-DEMO-0001"
    document = json.loads((case / "case.json").read_text())
    assert set(document) == {"case_id", "tnm", "indicators", "reports", "boxes", "vqa"}
    assert document["case_id"] == "GX-DEMO-0001"
    assert document["tnm"][0] == "T" and "N" in document["tnm"] and document["tnm"].endswith("M0")
    for indicator in document["indicators"]:
        assert set(indicator) == {"name", "value", "unit", "reference_range"}
        low, high = indicator["reference_range"]
        assert low < high
    out_of_range = [
        i
        for i in document["indicators"]
        if not i["reference_range"][0] <= i["value"] <= i["reference_range"][1]
    ]
    assert out_of_range, "a demo case should show abnormal values"
    assert all(len(document["reports"][k]) > 80 for k in ("diagnostic", "ct", "endoscopy"))
    assert 3 <= len(document["vqa"]) <= 5
    for item in document["vqa"]:
        assert set(item) == {"question", "options", "answer", "task"}
        assert item["options"]["ABCDEF".index(item["answer"])]
    shape = sitk_shapes(case)
    assert {box["phase"] for box in document["boxes"]} == set(PHASES)
    assert {box["label"] for box in document["boxes"]} == LABELS
    for box in document["boxes"]:
        x0, y0, z0, x1, y1, z1 = box["voxel"]
        z, y, x = shape[box["phase"]]
        assert 0 <= x0 < x1 <= x and 0 <= y0 < y1 <= y and 0 <= z0 < z1 <= z


def sitk_shapes(case: Path) -> dict[str, tuple[int, int, int]]:
    shapes = {}
    for phase in PHASES:
        reader = sitk.ImageSeriesReader()
        reader.SetFileNames(reader.GetGDCMSeriesFileNames(str(case / "ct" / phase)))
        image = reader.Execute()
        assert image.GetSpacing() == pytest.approx((0.78, 0.78, 5.0))
        shapes[phase] = sitk.GetArrayViewFromImage(image).shape
    return shapes


def test_gastricx_dicom_carries_fake_phi_for_deidentification_to_remove(demo):
    import pydicom

    first = sorted((demo.gastricx_root / "GX-DEMO-0001" / "ct" / "venous").glob("*.dcm"))[0]
    dataset = pydicom.dcmread(first)
    assert str(dataset.PatientName) == "DEMO^PATIENT^ONE"
    assert dataset.PatientBirthDate and dataset.InstitutionName and dataset.PatientID


def test_gastricx_endoscopy_is_a_jpeg(demo):
    with Image.open(demo.gastricx_root / "GX-DEMO-0001" / "endoscopy.jpg") as image:
        assert image.format == "JPEG" and image.mode == "RGB"


def test_the_same_seed_gives_identical_tsv_bytes(tmp_path):
    first = write_endobench_tsv(tmp_path / "a.tsv", seed=3, n_items=6).read_bytes()
    second = write_endobench_tsv(tmp_path / "b.tsv", seed=3, n_items=6).read_bytes()
    other = write_endobench_tsv(tmp_path / "c.tsv", seed=4, n_items=6).read_bytes()
    assert first == second
    assert first != other
    medqdeg = [
        write_medqdeg_tsv(tmp_path / f"m{k}.tsv", seed=3, n_items=7).read_bytes() for k in range(2)
    ]
    assert medqdeg[0] == medqdeg[1]


def test_the_apps_own_readers_accept_every_demo_file(demo):
    from annotations.formats.endobench import read_endobench_tsv
    from annotations.formats.gastricx import all_problems, read_gastricx_root
    from annotations.formats.medqdeg import MedQDegTsvReader

    endobench = read_endobench_tsv(demo.endobench_tsv)
    rows = list(endobench)
    assert endobench.problems == [] and len(rows) == ENDOBENCH_ITEMS
    assert all(endobench.check_family(row) == [] for row in rows)
    medqdeg = MedQDegTsvReader(demo.medqdeg_tsv)
    rows = list(medqdeg)
    assert medqdeg.problems == [] and len(rows) == MEDQDEG_ITEMS
    assert all(medqdeg.check_family(row) == [] for row in rows)
    cases = list(read_gastricx_root(demo.gastricx_root))
    assert all_problems(cases) == []
    assert set(cases[0].phases) == set(PHASES) and cases[0].endoscopy is not None
