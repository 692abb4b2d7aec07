"""An import's memory does not follow the size of a hostile cell: a 64 MB base64 cell is refused
at the cell limit without ever being held whole (peak RSS of the real command, measured in a
subprocess; no timing involved)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.formats.builders import MCQ_HEADER, b64, jpeg_bytes, mcq_row, write_tsv

ROOT = Path(__file__).resolve().parents[2]
HUGE = 64 * 1024**2
LIMIT = 2 * 1024**2


def peak_rss_mib(tsv: Path, folder: Path) -> tuple[float, int]:
    """Migrate a fresh SQLite database, then import `tsv`; (peak RSS of the import, exit)."""
    env = {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "IMPORT_MAX_CELL_BYTES": str(LIMIT),
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    command = [*manage, "import_benchmark", str(tsv), "--family", "vlmeval", "--name", "m"]
    process = subprocess.Popen(
        [*command, "-v", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    return usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def test_a_huge_cell_is_refused_without_being_held_in_memory(tmp_path):
    small = write_tsv(tmp_path / "small.tsv", [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))])
    huge = tmp_path / "huge.tsv"
    with open(huge, "w", encoding="ascii") as out:
        out.write("\t".join(MCQ_HEADER) + "\n1\t")
        for _ in range(HUGE // 1024**2):
            out.write("A" * 1024**2)
        out.write("\tWhat is shown?\tpolyp\tulcer\tbleeding\t\tA\tlesion\n")

    baseline, ok = peak_rss_mib(small, tmp_path / "a")
    refused, failed = peak_rss_mib(huge, tmp_path / "b")

    assert (ok, failed) == (0, 1)
    # Held whole, the cell alone would add 64 MB at least (several copies in practice).
    assert refused - baseline < 16, (baseline, refused)
