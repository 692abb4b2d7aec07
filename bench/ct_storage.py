"""Bytes on disk of an imported real-size case, as a ratio to its DICOM (budget ≤ 1.3×).

Run: ``.venv/bin/python bench/ct_storage.py``. It builds a throw-away site in a temporary
folder, generates one case of four 512×512×200 phases (CT-like noise σ 15 HU, as DICOM),
imports it and counts what the import stored (chunks + de-identified headers), the time taken,
and, as the baseline in the same run, what the earlier layout stored for the same phases
(de-identified DICOM with pixels + ``voxels.npy`` + the viewer's ``voxels.raw.gz``).
"""

from __future__ import annotations

import gzip
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPE = (200, 512, 512)
BUDGET = 1.3


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ct-storage-") as folder:
        var_dir = Path(folder)
        os.environ["VAR_DIR"] = str(var_dir)
        os.environ.setdefault("DEBUG", "1")  # development settings: a DEID_SECRET for the import
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        from annotations.imaging import ct
        from annotations.imaging.synthcase import write_synthetic_case
        from annotations.services.cases import gastricx_import

        call_command("migrate", verbosity=0)
        print(f"generating one case of 4 phases {SHAPE} ...", flush=True)
        case = write_synthetic_case(var_dir / "cases", "GX-STORE", shape=SHAPE, seed=2)
        dicom = size(case / "ct")
        start = time.perf_counter()
        gastricx_import(path=var_dir / "cases", name="storage")
        seconds = time.perf_counter() - start
        stored = size(Path(settings.MEDIA_ROOT) / "volumes")
        voxels = sum(
            size(p) for p in (Path(settings.MEDIA_ROOT) / "volumes").rglob("voxels") if p.is_dir()
        )

        before = 0  # the earlier layout, for the same phases
        scratch = var_dir / "before"
        pseudonyms = ct.Pseudonymizer("bench")
        for phase in sorted((case / "ct").iterdir()):
            loaded = ct.load_dicom_series(phase)
            written = ct.deidentify_series(phase, scratch / phase.name, pseudonyms)
            before += sum(p.stat().st_size for p in written)
            npy = ct.write_voxel_cache(loaded.voxels, scratch / f"{phase.name}.npy")
            before += npy.stat().st_size
            raw = gzip.compress(loaded.voxels.astype("<i2").tobytes(), compresslevel=1)
            before += len(raw)
    ratio, old = stored / dicom, before / dicom
    print(f"input DICOM {dicom / 2**20:8.1f} MiB (4 phases, {SHAPE[2]}×{SHAPE[1]}×{SHAPE[0]})")
    print(
        f"stored now  {stored / 2**20:8.1f} MiB = {ratio:.2f}× the DICOM "
        f"(chunks {voxels / 2**20:.1f} MiB, de-identified headers {(stored - voxels) / 2**20:.1f} MiB)"
    )
    print(
        f"before      {before / 2**20:8.1f} MiB = {old:.2f}× (DICOM + voxels.npy + voxels.raw.gz)"
    )
    print(f"import of the case: {seconds:.1f} s")
    print(f"budget ≤ {BUDGET}×: {'OK' if ratio <= BUDGET else 'OVER BUDGET'}")


if __name__ == "__main__":
    main()
