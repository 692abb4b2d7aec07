"""One real-size Gastric-X case (four phases of 512×512×200, CT-like noise σ 15 HU, as DICOM),
generated once per test session, for the tests marked ``realsize``."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.imaging.synthcase import REAL_SIZE_SHAPE, write_synthetic_case

REAL_SIZE_CASE = "GX-RS-0001"


@pytest.fixture(scope="session")
def real_size_root(tmp_path_factory) -> Path:
    """A root folder holding the one real-size case folder (about 400 MB of DICOM)."""
    root = tmp_path_factory.mktemp("realsize")
    write_synthetic_case(root, REAL_SIZE_CASE, shape=REAL_SIZE_SHAPE, seed=7)
    return root
