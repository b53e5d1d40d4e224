"""Smoke test of the scale benchmark (the benchmark itself is a script, not a timed test)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

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
    "host_s",
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
    assert row["host_s"] > 0 and abs(row["host_ms_per_resource"] - 1000 * row["host_s"] / row["resources"]) < 0.01
    assert abs(row["ratio"] - row["program_s"] / row["floor_s"]) < 0.05


def test_the_floor_replays_exactly_what_the_program_registers() -> None:
    """Like with like: the floor registers the same URNs with the same parents, dependencies,
    providers, options and inputs; only the program's own logic is missing."""
    from bench.floor import floor_program
    from bench.synthetic import SIZES, stack_file, synthetic_stack
    from offline.engine import run_callable, run_program

    size = SIZES["small"]
    stack = stack_file(size, synthetic_stack(size))
    program = run_program(PROJECT_DIR, stack)
    floor = run_callable(stack, lambda: floor_program(program.registrations))

    def comparable(run: Any) -> dict[str, dict[str, Any]]:
        out = {}
        for reg in run.registrations:
            fields = dataclasses.asdict(reg)
            fields["provider"] = reg.provider.rpartition("::")[0]  # the mock IDs differ per run
            out[reg.urn] = fields
        return out

    assert comparable(floor) == comparable(program)
    assert len(program.registrations) == 198 and not floor.duplicates


def test_a_cluster_settled_by_volcano_is_one_volcano_keeps(tmp_path: Any) -> None:
    """`bench/whatif.py --settled-by volcano` asks on the cluster as Volcano's code leaves the
    stack's first deploy, with the stack's models running: run on it again, that code moves no pod,
    as on a cluster the real scheduler settled."""
    from bench.stack_dir import write_stack_dir
    from bench.synthetic import SIZES
    from bench.whatif import dump, settled
    from config.platform_labels import MODEL_LABEL
    from live.cluster_state import state_from_objects
    from offline.render import render_stack
    from tests.whatif.test_volcano_engine import volcano_engine
    from whatif.scheduler.model import BINDING, RUNNING
    from whatif.volcano.predict import settle_with_volcano

    volcano_engine()
    render = render_stack(PROJECT_DIR, "bench-small", write_stack_dir(SIZES["small"], tmp_path))
    cluster = settled(render.spec, render.rendered, dump(render.spec), "volcano", new_every=0)
    running = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in cluster["items"]
        if o["kind"] == "Pod" and o["status"]["phase"] == "Running"
    }
    assert {o["metadata"].get("labels", {}).get(MODEL_LABEL) for o in running.values()} >= set(render.spec.models)
    session, _ = settle_with_volcano(state_from_objects(cluster["items"], "bench"), render.spec, render.rendered)
    after = {t.uid: t.node for j in session.jobs.values() for t in j.tasks if t.status in (RUNNING, BINDING)}
    assert after == {uid: o["spec"]["nodeName"] for uid, o in running.items()}
    # and on the cluster before the first deploy, Volcano's code itself places every model
    before_up = state_from_objects(dump(render.spec)["items"], "bench")
    session, models = settle_with_volcano(before_up, render.spec, render.rendered)
    placed = {t.uid for j in session.jobs.values() for t in j.tasks if t.status in (RUNNING, BINDING)}
    assert all(set(jobs.tasks) <= placed for jobs in models.values())
