"""`whatif` and `explain` on recorded dumps of the example cluster (aicloud-a, 128 nodes of 8 GPUs):
one dump per situation, written by `tests/fixtures/cluster/whatif/make.py`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cli.main import main
from live.cluster_state import read_file
from offline.render import StackRender
from tests.conftest import PROJECT_DIR, mutate, stack_raw
from whatif.predict import EVICTS, FITS, NEVER, WAITS, Prediction, predict

pytestmark = pytest.mark.slow  # whole what-if runs on recorded clusters: `make test`, not the edit loop

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
EMPTY = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "aicloud-a-handbuilt.yaml"
SCHEMA = json.loads((PROJECT_DIR / "schema" / "whatif.schema.json").read_text())
BIG, SMALL = "qwen2-72b-tenanta", "qwen8b-preemptor"


def prediction(render: StackRender, dump: Path) -> Prediction:
    return predict(read_file(dump), render.spec, render.rendered)


def verdicts(result: Prediction) -> dict[str, Any]:
    return {v.model: v for v in result.verdicts}


def test_on_an_idle_cluster_every_model_fits(committed_render: Callable[[str], StackRender]) -> None:
    result = prediction(committed_render("aicloud-a"), EMPTY)
    found = verdicts(result)
    assert {v.verdict for v in found.values()} == {FITS}
    assert found[BIG].domain in ("leafpair12", "leafpair34")  # soft topology: one leaf pair holds both pods
    assert found[SMALL].headroom == 768 - 17
    assert result.all_fit


def test_a_model_preempts_a_lower_priority_gang_of_its_queue(committed_render: Callable[[str], StackRender]) -> None:
    found = verdicts(prediction(committed_render("aicloud-a"), DUMPS / "aicloud-a-preempt.yaml"))
    for name, count in ((BIG, 2), (SMALL, 1)):
        verdict = found[name]
        assert verdict.verdict == EVICTS
        assert len(verdict.victims) == count
        for victim in verdict.victims:
            assert (victim.action, victim.queue, victim.namespace, victim.priority) == (
                "preempt",
                "tenanta",
                "a01",
                1000,
            )
            assert victim.pod_group.startswith("podgroup-batch-a-") and victim.gpus == 8


def test_reclaim_takes_from_the_queue_above_deserved_and_not_below(
    committed_render: Callable[[str], StackRender],
) -> None:
    result = prediction(committed_render("aicloud-a"), DUMPS / "aicloud-a-reclaim.yaml")
    found = verdicts(result)
    victims = [v for verdict in found.values() for v in verdict.victims]
    assert {v.verdict for v in found.values()} == {EVICTS}
    assert {(v.action, v.queue) for v in victims} == {("reclaim", "tenantb")}
    tenantb = next(t for t in result.tenants if t.queue == "tenantb")
    assert tenantb.allocated - sum(v.gpus for v in victims) * 1000 >= tenantb.deserved
    assert tenantb.over_capability  # 1024 GPUs: above min(capability, cluster - tenanta's guarantee)
    assert (
        tenantb.reclaimable and sum(v.gpus for v in tenantb.reclaimable) * 1000 >= tenantb.allocated - tenantb.deserved
    )


def test_a_full_queue_waits_and_says_why(committed_render: Callable[[str], StackRender]) -> None:
    found = verdicts(prediction(committed_render("aicloud-a"), DUMPS / "aicloud-a-full-queue.yaml"))
    for name in (BIG, SMALL):
        assert found[name].verdict == WAITS
        assert found[name].victims == []
        assert "queue `tenanta` is at 768 of 768 GPUs" in found[name].reason
        assert "tenants.tenanta.queue.capability" in found[name].reason


def _asleep(raw: dict[str, Any]) -> None:
    """SMALL sleeps at zero replicas and wakes to three (its wake-up query is the stack's own)."""
    raw["observability"] = {"enabled": True}
    raw["models"][SMALL]["autoscaling"] = {
        "minReplicas": 0,
        "maxReplicas": 3,
        "target": 5,
        "activation": {"query": "sum(rate(gateway_requests_total[2m]))"},
    }


def test_a_model_asleep_at_zero_is_judged_awake_at_its_maximum(render_raw: Callable[..., StackRender]) -> None:
    """At zero replicas a model always "fits"; what the reader needs is whether it can wake."""
    render = render_raw(mutate(stack_raw("aicloud-a"), _asleep))
    idle = verdicts(prediction(render, EMPTY))[SMALL]
    assert idle.verdict == FITS and idle.headroom == 768 - 16 - 3
    assert idle.note == "sleeps at zero replicas; judged awake at its maximum (3)"
    full = verdicts(prediction(render, DUMPS / "aicloud-a-full-queue.yaml"))[SMALL]
    assert full.verdict == WAITS and "queue `tenanta` is at 768 of 768 GPUs" in full.reason
    assert full.note == idle.note


def tainted_dump(tmp_path: Path) -> Path:
    """The idle cluster with every node tainted for maintenance (no model tolerates it)."""
    data = yaml.safe_load(EMPTY.read_text())
    for item in data["items"]:
        if item["kind"] == "Node":
            item.setdefault("spec", {})["taints"] = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]
    path = tmp_path / "tainted.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_model_no_node_admits_never_runs(committed_render: Callable[[str], StackRender], tmp_path: Path) -> None:
    found = verdicts(prediction(committed_render("aicloud-a"), tainted_dump(tmp_path)))
    for name in (BIG, SMALL):
        assert found[name].verdict == NEVER
        assert "no node can hold a pod" in found[name].reason and f"models.{name}.resources" in found[name].reason


def test_a_model_no_node_can_hold_never_runs(render_raw: Callable[..., StackRender]) -> None:
    raw = mutate(stack_raw("aicloud-a"), lambda r: r["models"][SMALL].update(nodeSelector={"pool": "absent"}))
    found = verdicts(prediction(render_raw(raw), EMPTY))
    assert found[SMALL].verdict == NEVER and f"models.{SMALL}.resources" in found[SMALL].reason


MODEL = ("--json", "--engine", "model")


def _cli(*arguments: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The command with the model answering (`tests/whatif/test_volcano_engine.py` runs Volcano's code)."""
    code = main([*arguments, "--engine", "model"])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("dump", "code", "verdict"),
    [
        (EMPTY, 0, "fits"),
        (DUMPS / "aicloud-a-preempt.yaml", 1, "fits-after-eviction"),
        (DUMPS / "aicloud-a-full-queue.yaml", 1, "waits"),
    ],
)
def test_json_follows_its_schema_and_the_exit_code_the_verdict(
    dump: Path, code: int, verdict: str, capsys: pytest.CaptureFixture[str]
) -> None:
    got, out = _cli("whatif", "--stack", "aicloud-a", "--from", str(dump), "--json", capsys=capsys)
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    assert got == code
    assert {m["verdict"] for m in data["models"]} == {verdict}
    assert data["volcano"] == "v1.15.1" and "gangreclaim" in data["policy"] and data["engine"] == "model"


def test_markdown_puts_evictions_first_and_names_what_it_does_not_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli("whatif", "--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-preempt.yaml"), capsys=capsys)
    assert code == 1
    assert "**2** evicts" in out and "preempt `a01/podgroup-batch-a-" in out
    assert "Volcano v1.15.1" in out and "Not modelled" in out


@pytest.mark.parametrize(
    ("dump", "expected"),
    [
        (EMPTY, "runs: every pod fits"),
        (DUMPS / "aicloud-a-preempt.yaml", "starts once `a01/podgroup-batch-a-"),
        (DUMPS / "aicloud-a-reclaim.yaml", "starts once `b01/podgroup-batch-b-"),
        (DUMPS / "aicloud-a-full-queue.yaml", "is not admitted"),
    ],
)
def test_explain_names_the_reason(dump: Path, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli("explain", BIG, "--stack", "aicloud-a", "--from", str(dump), capsys=capsys)
    assert expected in out
    assert code == (0 if dump == EMPTY else 1)


def test_explain_of_a_model_that_never_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli("explain", BIG, "--stack", "aicloud-a", "--from", str(tainted_dump(tmp_path)), capsys=capsys)
    assert code == 1 and "never runs" in out and "no node can hold a pod of 8 GPUs" in out


def test_explain_of_an_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "nope", "--stack", "aicloud-a", "--from", str(EMPTY), "--engine", "model"]) == 2
    assert "has no model 'nope'" in capsys.readouterr().err


def test_the_recorded_dumps_are_what_make_py_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_dumps", DUMPS / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.write()
    for written in tmp_path.glob("*.yaml"):
        assert written.read_text() == (DUMPS / written.name).read_text(), written.name


def test_the_prediction_does_not_depend_on_the_hash_seed() -> None:
    """Sets and hashes order nothing the report shows: two interpreters with different hash seeds
    print the same JSON."""
    import os
    import subprocess

    from tests.conftest import TOOL

    outputs = set()
    for seed in ("1", "2"):
        done = subprocess.run(
            [*TOOL, "whatif", "--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-reclaim.yaml"), *MODEL],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=PROJECT_DIR,
        )
        assert done.returncode == 1, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_explain_of_an_eviction_names_each_victim_with_its_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    dump = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "aicloud-a-preempt.yaml"
    code = main(["explain", "qwen8b-preemptor", "--stack", "aicloud-a", "--from", str(dump), "--engine", "model"])
    out = capsys.readouterr().out
    assert code == 1, "not a plain fit: it evicts"
    assert "Its queue keeps 71 GPUs below its limit afterwards." in out
    assert "- `a01/podgroup-batch-a-86`: preempt from queue `tenanta`, priority 1000, 8 GPUs, in `leafpair34`" in out


def _never_preempting(raw: dict[str, Any], eviction: str) -> None:
    raw.setdefault("volcano", {}).setdefault("scheduler", {})["eviction"] = eviction
    raw["priorityClasses"] = {
        name: {"value": value, "preemptionPolicy": "Never"}
        for name, value in (("p0-critical", 1_000_000), ("p1-high", 100_000), ("p2-normal", 10_000), ("p3-low", 1_000))
    }


def test_a_new_pod_of_a_never_preempting_class_evicts_nobody_by_pod(render_raw: Callable[..., StackRender]) -> None:
    """The API server copies the class's `preemptionPolicy: Never` into each new pod (the Priority
    admission plugin), and Volcano's `preempt` action then evicts nobody for it
    (`taskEligibleToPreempt`, pkg/scheduler/actions/preempt/preempt.go): the models that preempted
    a lower-priority gang of their queue in the test above wait instead. `gangpreempt` does not read
    the policy (pkg/scheduler/actions/gangpreempt/ has no such check in v1.15.1), so with gang
    eviction they still evict."""
    by_pod = render_raw(mutate(stack_raw("aicloud-a"), lambda raw: _never_preempting(raw, "pod")))
    found = verdicts(prediction(by_pod, DUMPS / "aicloud-a-preempt.yaml"))
    for name in (BIG, SMALL):
        assert found[name].verdict == WAITS and not found[name].victims, found[name]
    by_gang = render_raw(mutate(stack_raw("aicloud-a"), lambda raw: _never_preempting(raw, "gang")))
    assert verdicts(prediction(by_gang, DUMPS / "aicloud-a-preempt.yaml"))[BIG].verdict == EVICTS
