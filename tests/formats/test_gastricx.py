from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from annotations.formats.errors import FormatError
from annotations.formats.gastricx import (
    all_problems,
    read_gastricx_root,
    read_gastricx_zip,
    tnm_label_sets,
    validate_case_volumes,
)
from annotations.imaging.synthct import write_synthetic_series


def case_json(case_id: str = "GX001", **changes) -> dict:
    data = {
        "case_id": case_id,
        "tnm": "T3N1M0",
        "indicators": [
            {"name": "CEA", "value": 7.2, "unit": "ng/mL", "reference_range": [0, 5]},
            {"name": "CA19-9", "value": "<2", "unit": "U/mL", "reference_range": None},
        ],
        "reports": {
            "diagnostic": "Gastric adenocarcinoma.",
            "ct": "Wall thickening.",
            "endoscopy": None,
        },
        "boxes": [{"phase": "venous", "label": "tumor", "voxel": [2, 3, 1, 6, 7, 3]}],
        "vqa": [
            {"question": "Stage?", "options": ["T1", "T2", "T3"], "answer": "C", "task": "tnm"}
        ],
    }
    data.update(changes)
    return data


def make_case(root: Path, name: str, data: dict | str, phases=("venous",), nifti=()) -> Path:
    folder = root / name
    (folder / "ct").mkdir(parents=True)
    text = data if isinstance(data, str) else json.dumps(data)
    (folder / "case.json").write_text(text, encoding="utf-8")
    for phase in phases:
        write_synthetic_series(
            folder / "ct" / phase,
            np.zeros((4, 8, 8), np.int16),
            spacing=(1, 1, 2),
            origin=(0, 0, 0),
            phase=phase,
        )
    for phase in nifti:
        (folder / "ct" / f"{phase}.nii.gz").write_bytes(b"placeholder")
    (folder / "endoscopy.jpg").write_bytes(b"\xff\xd8\xff")
    return folder


def reasons(case) -> str:
    return " | ".join(f"{p.column}: {p.reason}" for p in case.problems)


def test_it_reads_a_valid_case_folder(tmp_path):
    make_case(tmp_path, "GX001", case_json(), phases=("venous", "arterial"), nifti=("delayed",))
    [case] = list(read_gastricx_root(tmp_path))
    assert case.problems == []
    assert (case.case_id, case.tnm, case.row) == ("GX001", "T3N1M0", 1)
    assert sorted(case.phases) == ["arterial", "delayed", "venous"]
    assert case.phases["delayed"].name == "delayed.nii.gz"
    assert case.phases["venous"].is_dir()
    assert case.endoscopy == tmp_path / "GX001" / "endoscopy.jpg"
    assert case.indicators[0].reference_range == (0.0, 5.0) and case.indicators[0].value == 7.2
    assert case.indicators[1].value == "<2"
    assert case.reports == {
        "diagnostic": "Gastric adenocarcinoma.",
        "ct": "Wall thickening.",
        "endoscopy": None,
    }
    assert case.boxes[0].voxel == (2, 3, 1, 6, 7, 3) and case.boxes[0].label == "tumor"
    assert case.vqa[0].answer == "C" and case.vqa[0].options == ["T1", "T2", "T3"]


def test_it_reports_missing_fields(tmp_path):
    data = case_json()
    del data["tnm"], data["vqa"]
    make_case(tmp_path, "GX001", data)
    [case] = list(read_gastricx_root(tmp_path))
    assert {p.column for p in case.problems} == {"tnm", "vqa"}
    assert "lacks field 'tnm'" in reasons(case)


@pytest.mark.parametrize(
    ("change", "column", "message"),
    [
        (
            {"boxes": [{"phase": "portal", "label": "tumor", "voxel": [0, 0, 0, 1, 1, 1]}]},
            "boxes[0]",
            "unknown phase",
        ),
        (
            {"boxes": [{"phase": "venous", "label": "liver", "voxel": [0, 0, 0, 1, 1, 1]}]},
            "boxes[0]",
            "unknown label",
        ),
        (
            {"boxes": [{"phase": "venous", "label": "tumor", "voxel": [0, 0, 0, 1, 1]}]},
            "boxes[0]",
            "6 integers",
        ),
        (
            {"boxes": [{"phase": "venous", "label": "tumor", "voxel": [3, 0, 0, 1, 1, 1]}]},
            "boxes[0]",
            "x0 < x1",
        ),
        (
            {"vqa": [{"question": "Q", "options": ["a", "b"], "answer": "C", "task": "t"}]},
            "vqa[0]",
            "not one of the option letters AB",
        ),
        (
            {"vqa": [{"question": "Q", "options": ["a"], "answer": "A", "task": "t"}]},
            "vqa[0]",
            "2 to 26",
        ),
        (
            {
                "indicators": [
                    {"name": "CEA", "value": 1, "unit": "ng/mL", "reference_range": [5, 0]}
                ]
            },
            "indicators[0]",
            "reference_range",
        ),
        (
            {"indicators": [{"name": "CEA", "value": "x" * 41, "unit": None}]},
            "indicators[0]",
            "value is longer than 40",
        ),
        (
            {"indicators": [{"name": "CEA", "value": 1, "unit": "u" * 41}]},
            "indicators[0]",
            "unit is longer than 40",
        ),
        (
            {"indicators": [{"name": "N" * 101, "value": 1, "unit": None}]},
            "indicators[0]",
            "name is longer than 100",
        ),
        ({"case_id": ""}, "case_id", "non-empty"),
        (
            {"reports": {"diagnostic": "a", "ct": None, "endoscopy": None, "pathology": "x"}},
            "reports",
            "unknown report",
        ),
        ({"reports": {"diagnostic": "a", "ct": None}}, "reports.endoscopy", "lacks 'endoscopy'"),
        (
            {"reports": {"diagnostic": "  ", "ct": None, "endoscopy": None}},
            "reports.diagnostic",
            "must hold text",
        ),  # fmt: skip
        ({"tnm": "T5N1M0"}, "tnm", "T5 is not in the label set"),
        ({"tnm": "T3N1M7"}, "tnm", "M7 is not in the label set"),
        ({"tnm": "stage III"}, "tnm", "is not T…N…M…"),
    ],
)
def test_it_reports_bad_case_json_content(tmp_path, change, column, message):
    make_case(tmp_path, "GX001", case_json(**change))
    [case] = list(read_gastricx_root(tmp_path))
    assert [p.column for p in case.problems] == [column]
    assert message in case.problems[0].reason


def test_it_reports_a_case_without_ct_and_a_box_on_a_missing_phase(tmp_path):
    make_case(tmp_path, "GX001", case_json(), phases=())
    make_case(tmp_path, "GX002", case_json("GX002"), phases=("arterial",))
    first, second = read_gastricx_root(tmp_path)
    assert "no CT" in reasons(first)
    assert "no venous CT" in reasons(second) and second.row == 2


def test_it_reports_unknown_phase_folders_invalid_json_and_duplicate_ids(tmp_path):
    make_case(tmp_path, "A", case_json(), phases=("venous", "portal"))
    make_case(tmp_path, "B", "{not json")
    make_case(tmp_path, "C", case_json())
    cases = list(read_gastricx_root(tmp_path))
    assert "unknown phase 'portal'" in reasons(cases[0])
    assert "not valid JSON" in reasons(cases[1])
    assert "already used by folder A" in reasons(cases[2])
    assert len(all_problems(cases)) == 3


def test_it_accepts_a_root_wrapping_the_cases_in_one_folder(tmp_path):
    make_case(tmp_path / "gastricx", "GX001", case_json())
    assert [c.case_id for c in read_gastricx_root(tmp_path)] == ["GX001"]


def test_it_refuses_a_root_without_cases(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(FormatError, match="no case folders") as caught:
        read_gastricx_root(tmp_path)
    # Said in words that name what is missing, not "The file holds no item." (issue 28).
    [problem] = caught.value.problems
    assert problem.code == "no_case_json"
    from annotations.labels import IMPORT_PROBLEM_LABELS

    assert "No case.json found" in str(IMPORT_PROBLEM_LABELS[problem.code])


def test_box_bounds_are_checked_against_loaded_volume_shapes(tmp_path):
    boxes = [
        {"phase": "venous", "label": "tumor", "voxel": [2, 3, 1, 6, 7, 3]},
        {"phase": "venous", "label": "stomach", "voxel": [0, 0, 0, 9, 8, 4]},
    ]
    make_case(tmp_path, "GX001", case_json(boxes=boxes))
    [case] = list(read_gastricx_root(tmp_path))
    problems = validate_case_volumes(case, {"venous": (4, 8, 8)})
    assert [(p.column, p.reason) for p in problems] == [
        ("boxes[1].voxel", "x1=9 is outside the venous volume (x size 8)")
    ]
    assert len(validate_case_volumes(case, {})) == 2


def _zip_tree(source: Path, zip_path: Path) -> None:
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            archive.write(path, path.relative_to(source).as_posix())


def test_it_reads_cases_from_a_zip(tmp_path):
    make_case(tmp_path / "tree", "GX001", case_json())
    _zip_tree(tmp_path / "tree", tmp_path / "cases.zip")
    [case] = list(read_gastricx_zip(tmp_path / "cases.zip", tmp_path / "out"))
    assert case.problems == [] and case.folder == tmp_path / "out" / "GX001"
    assert len(list(case.phases["venous"].iterdir())) == 4


@pytest.mark.parametrize(
    "name",
    ["../evil.txt", "GX001/../../evil.txt", "/tmp/evil.txt", "C:/evil.txt", "a\\..\\..\\evil.txt"],
)
def test_it_refuses_zip_entries_escaping_the_target(tmp_path, name):
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as archive:
        archive.writestr("GX001/case.json", json.dumps(case_json()))
        archive.writestr(name, "pwned")
    with pytest.raises(FormatError, match="unsafe zip entry"):
        read_gastricx_zip(tmp_path / "bad.zip", tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "out").exists()


def test_it_refuses_symlinks_in_a_zip(tmp_path):
    link = zipfile.ZipInfo("GX001/ct")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as archive:
        archive.writestr(link, "/etc")
    with pytest.raises(FormatError, match="symbolic links"):
        read_gastricx_zip(tmp_path / "bad.zip", tmp_path / "out")


def test_it_refuses_a_decompression_bomb(tmp_path):
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("GX001/ct/venous/zeros.dcm", b"\0" * 2_000_000)
    with pytest.raises(FormatError, match="decompression bomb"):
        read_gastricx_zip(tmp_path / "bomb.zip", tmp_path / "out", max_total_bytes=1_000_000)
    assert not (tmp_path / "out").exists()


def test_it_refuses_a_bomb_whose_header_lies_about_its_size(tmp_path):
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("GX001/big.bin", b"\0" * 50_000)
    data = bytearray((tmp_path / "bomb.zip").read_bytes())
    # Patch the central directory's uncompressed size (offset 24 in the entry) down to 10 bytes.
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (10).to_bytes(4, "little")
    (tmp_path / "bomb.zip").write_bytes(bytes(data))
    with pytest.raises(FormatError):
        read_gastricx_zip(tmp_path / "bomb.zip", tmp_path / "out", max_total_bytes=1_000)


def test_it_refuses_too_many_entries_and_non_zip_files(tmp_path):
    with zipfile.ZipFile(tmp_path / "many.zip", "w") as archive:
        for k in range(5):
            archive.writestr(f"GX001/{k}.txt", "x")
    with pytest.raises(FormatError, match="5 entries"):
        read_gastricx_zip(tmp_path / "many.zip", tmp_path / "out", max_entries=4)
    (tmp_path / "fake.zip").write_bytes(b"not a zip")
    with pytest.raises(FormatError, match="not a readable zip"):
        read_gastricx_zip(tmp_path / "fake.zip", tmp_path / "out2")


def test_it_splits_the_tnm_code_into_labels_of_the_fixed_sets(tmp_path):
    make_case(tmp_path, "GX001", case_json(tnm="t4a N3b m0"))
    [case] = list(read_gastricx_root(tmp_path))
    assert case.problems == []
    assert case.tnm == "t4a N3b m0"  # as given, for the case page and round trips
    assert case.tnm_labels.by_field() == {"tnm": "T4aN3bM0", "t": "T4a", "n": "N3b", "m": "M0"}


def test_a_case_without_tnm_has_no_labels(tmp_path):
    make_case(tmp_path, "GX001", case_json(tnm=None))
    [case] = list(read_gastricx_root(tmp_path))
    assert case.problems == [] and case.tnm_labels is None


def test_the_label_sets_order_the_codes_by_t_then_n_then_m():
    sets = tnm_label_sets(["T4aN1M0", "T3N2M0", "T3N1M0", "T3N1M0", "TisN0M0"])
    assert sets["tnm"] == ["TisN0M0", "T3N1M0", "T3N2M0", "T4aN1M0"]
    assert sets["t"][:3] == ["TX", "T0", "Tis"] and sets["m"] == ["M0", "M1"]
    assert "N3b" in sets["n"]


def test_it_keeps_unknown_keys_of_the_case_and_of_its_questions(tmp_path):
    vqa = [{"question": "Q?", "options": ["a", "b"], "answer": "B", "task": "t", "qid": "q-7"}]
    document = case_json(vqa=vqa, hospital_site="B", follow_up={"months": 14, "alive": True})
    make_case(tmp_path, "GX001", document)
    [case] = list(read_gastricx_root(tmp_path))
    assert case.problems == []
    assert case.extra == {"hospital_site": "B", "follow_up": {"months": 14, "alive": True}}
    assert case.vqa[0].extra == {"qid": "q-7"}
