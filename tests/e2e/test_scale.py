"""The stack of 1,000 KWOK nodes and 100 models (`scale.py`): `pulumi up` completes, and a preview
right after shows no change. `bench/real_up.py` records the same run's times and the API server's
memory in bench/results.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.scale import SIZE, run

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def test_a_thousand_nodes_and_a_hundred_models_apply_and_preview_clean(
    tmp_path: Path, real_programs: dict[str, Path]
) -> None:
    figures = run(tmp_path / "scale-cluster0", real_programs)
    # Kept beside the run (pytest's temporary folder) for bench/results.md.
    (tmp_path / "figures.json").write_text(json.dumps(figures, indent=1))
    assert figures["preview_clean"], figures["preview_tail"]
    assert figures["resources"] > SIZE.nodes + SIZE.models
    assert figures["pods_running"] == figures["pods"] > SIZE.models
    # The pull request's comment leads with the one change and stays small at this size.
    assert figures["comment_first_line_after_edit"].startswith("1 to update;"), figures
    assert figures["comment_bytes_after_edit"] < 20_000 and figures["edit_applied"], figures["comment_after_edit"]
