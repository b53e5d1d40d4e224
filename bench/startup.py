"""The first command's wait: `volcano-platform render` of an example stack against the bare import
of the SDKs it uses (`pulumi`, `pulumi_kubernetes`), each a fresh process as a user runs it, with
Python's compiled modules in place (a second run of either).

Usage:  python bench/startup.py [--stack aicloud-a] [--repeat 7]    # prints one JSON line
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / ".venv" / "bin" / "volcano-platform"


def _timed(command: list[str], repeat: int) -> float:
    """The median wall time of `repeat` runs after one untimed run (which leaves the bytecode)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="aicloud-a")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        render = _timed([str(TOOL), "render", "--stack", args.stack, "--out", out], args.repeat)
    sdk = _timed([sys.executable, "-c", "import pulumi, pulumi_kubernetes"], args.repeat)
    print(json.dumps({"stack": args.stack, "render_s": round(render, 3), "sdk_import_s": round(sdk, 3),
                      "ratio": round(render / sdk, 2)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
