"""Smoke test of the scale benchmark (the benchmark itself is a script, not a timed test)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import PROJECT_DIR

FIELDS = {
    "size",
    "nodes",
    "models",
    "tenants",
    "resources",
    "validate_s",
    "program_s",
    "floor_s",
    "ratio",
    "peak_rss_mb",
}


def test_small_size_prints_the_documented_fields() -> None:
    proc = subprocess.run(
        [sys.executable, str(PROJECT_DIR / "bench" / "scale.py"), "--size", "small"],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_DIR,
    )
    (line,) = proc.stdout.strip().splitlines()
    row = json.loads(line)
    assert set(row) >= FIELDS
    assert row["size"] == "small" and row["nodes"] == 128 and row["models"] == 10
    assert row["resources"] == sum(row["by_kind"].values()) and row["by_kind"]["NodePatch"] == 128
    assert row["program_s"] > 0 and row["floor_s"] > 0
    assert abs(row["ratio"] - row["program_s"] / row["floor_s"]) < 0.05
