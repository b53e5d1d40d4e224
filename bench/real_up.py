"""`pulumi up` for real at scale: the stack of 1,000 KWOK nodes and 100 models applied with the
Pulumi CLI and provider to a cluster of local processes (`tests/e2e/scale.py`), then a preview
that must show no change, the pull requests' `preview --refresh` (JSON and `--diff` text) and a
one-line edit's `up --refresh`; prints the times, the sizes and the peak memory for
bench/results.md.

    .venv/bin/python bench/real_up.py      # after `make real-cluster`
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox.programs import programs
from tests.e2e.scale import run


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="real-up-") as folder:
        figures = run(Path(folder), programs(), measure_text=True)
    print(json.dumps(figures, indent=1))
    return 0 if figures["preview_clean"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
