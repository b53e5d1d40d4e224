"""The model against Volcano's own code on generated clusters, by category: the figure the
differential test (`tests/whatif/test_volcano_differential.py`) holds to its floor, for
bench/results.md, with the clusters that differ listed by number.

    .venv/bin/python bench/differential.py [--clusters 2000] [--start 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.whatif.test_volcano_differential import compare, figures, generated
from whatif.volcano.build import ensure_built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=2000)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args(argv)
    engine = ensure_built()
    found = generated(args.clusters, args.start)
    started = time.perf_counter()
    compared = compare(engine, found)
    elapsed = time.perf_counter() - started
    differ = [args.start + i for i, (model, real) in enumerate(compared) if model not in real]
    print(f"agree: {figures(found, compared)}")
    print(f"differ: {differ}")
    print(f"{elapsed:.0f} s for {len(found)} clusters (the model and Volcano's code, 12 processes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
