"""Every problem of a Gastric-X import carries a code the app translates (issue 29): a curator
reads the report in their language, never an empty code."""

from __future__ import annotations

import json
import shutil

import pytest

from annotations.labels import IMPORT_PROBLEM_LABELS, import_problem
from annotations.services.cases import gastricx_import_run
from annotations.services.imports import ImportFailed
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case


def test_each_kind_of_gastricx_problem_has_a_translated_code(tmp_path, people):
    root = tmp_path / "cases"
    write_case(root, "GX-A-0001", phases=SMALL_GEOMETRY)
    # The same case id twice; a stage that is no TNM code; a box beyond its volume; reports
    # of the wrong types; a phase folder of an unknown name; an unreadable endoscopy image.
    write_case(root, "GX-A-0002", phases=SMALL_GEOMETRY, document=case_document("GX-A-0001"))
    document = case_document("GX-A-0003", tnm="stage three")
    document["boxes"] = [{"phase": "venous", "label": "tumor", "voxel": [0, 0, 0, 999, 5, 2]}]
    document["reports"] = {"diagnostic": 7, "ct": "", "endoscopy": None, "other": "x"}
    bad = write_case(root, "GX-A-0003", phases=SMALL_GEOMETRY, document=document)
    shutil.copytree(bad / "ct" / "venous", bad / "ct" / "portal")
    (bad / "endoscopy.jpg").write_bytes(b"not an image")
    broken = root / "GX-A-0004"
    broken.mkdir()
    (broken / "case.json").write_text("{not json")
    (root / "GX-A-0005").mkdir()
    (root / "GX-A-0005" / "case.json").write_text(json.dumps(["a list"]))

    with pytest.raises(ImportFailed) as failure:
        gastricx_import_run(path=root, name="gx", user=people["curator"])

    problems = failure.value.problems
    assert len(problems) >= 6
    for problem in problems:
        assert problem.code in IMPORT_PROBLEM_LABELS, str(problem)
        shown = import_problem({"row": problem.row, "column": problem.column,
                                "reason": problem.reason, "code": problem.code})  # fmt: skip
        assert shown["text"] and shown["detail"] == problem.reason
    codes = {problem.code for problem in problems}
    assert {"duplicate_case", "bad_case_json", "bad_value", "bad_ct", "bad_tnm"} <= codes
