"""`python -m annotations.scoring RELEASE_DIR PREDICTIONS [--seed N] [--resamples N]`: score
predictions against a release folder alone (no Django settings, no database) and print the
`overall`, `tasks` and `task_details` blocks `run_model --out` writes (`scoring.release`).

PREDICTIONS is the JSON `run_model --out FILE.json` writes (its bootstrap seed is read from it)
or JSON lines, one prediction a line: `{"index": 12, "prediction": "B"}` and, where they apply,
`error`, `judge_letter`, `box`, `slice_boxes`, `report_to_case_rank`, `case_to_report_rank`.
"""

from __future__ import annotations

import argparse
import json
import sys

from annotations.scoring.bootstrap import DEFAULT_RESAMPLES
from annotations.scoring.release import ReleaseError, load_predictions, load_release, score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m annotations.scoring",
        description="Score predictions against a ClinReview release folder.",
    )
    parser.add_argument("release", help="the release folder (with manifest.json)")
    parser.add_argument("predictions", help="run_model --out JSON, or JSON lines")
    parser.add_argument("--seed", type=int, help="bootstrap seed (default: the file's, else 0)")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    args = parser.parse_args(argv)
    try:
        release = load_release(args.release)
        rows, seed = load_predictions(args.predictions)
        seed = args.seed if args.seed is not None else (seed or 0)
        result = score(release, rows, seed=seed, resamples=args.resamples)
    except (ReleaseError, OSError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
