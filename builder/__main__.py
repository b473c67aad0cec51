"""``python -m builder SUBMISSION.zip [--tag NAME] [--backend docker|local] [--work-dir DIR]``.

Prints the BuildResult as JSON (the log on stderr with --verbose); exit 0 on success, 1 on a bad
submission or failed build, 2 on an infrastructure problem.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from builder import build_submission


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m builder", description="Validate and build a submission zip"
    )
    parser.add_argument("zip", type=Path, help="the submission zip (player.py [+ requirements.txt, files])")
    parser.add_argument("--tag", help="extra image name, e.g. my-bot:1 (docker backend)")
    parser.add_argument("--backend", choices=("docker", "local"), default="docker")
    parser.add_argument("--work-dir", type=Path, default=Path("data/builds"), help="where local builds go")
    parser.add_argument("--verbose", "-v", action="store_true", help="print the build log on stderr")
    args = parser.parse_args(argv)
    result = build_submission(args.zip, tag=args.tag, backend=args.backend, work_dir=args.work_dir)
    if args.verbose and result.log:
        sys.stderr.write(result.log)
    summary = dataclasses.asdict(result)
    summary.pop("log")
    print(json.dumps(summary, indent=2))
    if result.ok:
        return 0
    return 2 if result.error_kind == "INFRA" else 1


if __name__ == "__main__":
    sys.exit(main())
