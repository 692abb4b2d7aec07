"""Demo benchmark files for all three families, written in the benchmarks' own import formats.

`build_demo_files` is what `seed_demo` calls; the app then imports the files through its normal
import path, so the demo exercises the same code as real data.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from demo.endobench import write_endobench_tsv
from demo.gastricx import write_gastricx_cases
from demo.medqdeg import write_medqdeg_tsv

__all__ = ["DemoFiles", "build_demo_files"]


@dataclass(frozen=True)
class DemoFiles:
    """Where `build_demo_files` wrote each family's files."""

    endobench_tsv: Path
    medqdeg_tsv: Path
    gastricx_root: Path


def build_demo_files(
    out_dir: Path,
    *,
    seed: int = 7,
    endobench_items: int = 60,
    medqdeg_items: int = 42,
    gastricx_cases: int = 2,
) -> DemoFiles:
    """Write synthetic EndoBench, MedQ-DEG (clean images) and Gastric-X files under `out_dir`.

    Files are byte-identical for a given seed (DICOM UIDs included). Layout:
    `endobench/EndoBench.tsv`, `medqdeg/MedQDEG_demo.tsv`, `gastricx/<CASE_ID>/...`.
    """
    out_dir = Path(out_dir)
    return DemoFiles(
        endobench_tsv=write_endobench_tsv(
            out_dir / "endobench" / "EndoBench.tsv", seed=seed, n_items=endobench_items
        ),
        medqdeg_tsv=write_medqdeg_tsv(
            out_dir / "medqdeg" / "MedQDEG_demo.tsv", seed=seed, n_items=medqdeg_items
        ),
        gastricx_root=write_gastricx_cases(out_dir / "gastricx", seed=seed, n_cases=gastricx_cases),
    )
