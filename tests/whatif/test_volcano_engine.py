"""Volcano's own scheduling code (`volcano-session`, built from Volcano v1.15.1's Go module) as the
what-if's engine, and the model held to it.

- Every conformance fixture transcribed from Volcano's tests is run through the real session,
  with the flags the test sets: a fixture the real code disagrees with was mistranscribed.
- `whatif --engine volcano` answers the example cluster's recorded dumps.
- The differential (model and real code on the same generated clusters) lives in
  `test_volcano_differential.py`.

Go is needed to build the program: without it these tests skip, and in CI (`CI=true`) they fail.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cli.main import main
from live.cluster_state import read_file, state_from_objects
from tests.conftest import PROJECT_DIR, stack_raw
from tests.e2e.stacks import dev_nodes
from tests.whatif.clusters import build, policy_conf
from tests.whatif.test_whatif import EMPTY, tainted_dump
from whatif.predict import predict
from whatif.scheduler.model import PIPELINED
from whatif.volcano.build import EngineUnavailableError, binary_path, ensure_built, go_available
from whatif.volcano.differential import volcano_case
from whatif.volcano.objects import scenario_case
from whatif.volcano.predict import predict_with_volcano
from whatif.volcano.runner import run_cases

pytestmark = pytest.mark.slow  # builds and runs a Go program
CONFORMANCE = PROJECT_DIR / "tests" / "whatif" / "conformance"
CASES = sorted(CONFORMANCE.glob("*/*.yaml"))
DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
SCHEMA = json.loads((PROJECT_DIR / "schema" / "whatif.schema.json").read_text())


def volcano_engine() -> Path:
    """The built program; skipped without Go locally, a failure in CI."""
    try:
        return ensure_built()
    except EngineUnavailableError as why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the Volcano engine cannot be built: {why}")
        pytest.skip(f"the Volcano engine cannot be built here: {why}")


@pytest.fixture(scope="module")
def engine() -> Path:
    return volcano_engine()


def expectation_problems(scenario: dict[str, Any], cycle: dict[str, Any]) -> list[str]:
    """How one session's result differs from what the upstream test expects, checked the way
    `pkg/scheduler/uthelper/helper.go` `CheckAll` checks it (and `tests/whatif/test_conformance.py`
    checks the model)."""
    expect = scenario["expect"]
    found = []
    minimal = "MinimalBindCheck" in str(expect.get("other", ""))
    if len(cycle["binds"]) != expect.get("bindCount", 0):
        found.append(f"binds {cycle['binds']}, upstream expects {expect.get('bindCount', 0)}")
    elif expect.get("bind") and not minimal and cycle["binds"] != expect["bind"]:
        found.append(f"binds {cycle['binds']}, upstream expects {expect['bind']}")
    evicted = expect.get("evicted") or []
    if Counter(cycle["evictions"]) != Counter(evicted) or len(cycle["evictions"]) != expect.get("evictCount", 0):
        found.append(f"evictions {cycle['evictions']}, upstream expects {evicted}")
    for job, nodes in (expect.get("pipelined") or {}).items():
        got = cycle["pipelined"].get(job) or []
        if not got or any(node not in nodes for node in got):
            found.append(f"{job} pipelined on {got}, upstream expects {nodes}")
    for job, phase in (expect.get("status") or {}).items():
        if cycle["phases"].get(job) != phase:
            found.append(f"{job} phase {cycle['phases'].get(job)}, upstream expects {phase}")
    return found


def _conformance_answers(engine: Path, cases: list[Path], mutate: Any = None) -> list[tuple[Path, list[list[str]]]]:
    scenarios = [yaml.safe_load(p.read_text()) for p in cases]
    if mutate:
        scenarios = [mutate(s) for s in scenarios]
    answers = run_cases(
        [scenario_case(str(p), s, repeat=2) for p, s in zip(cases, scenarios, strict=True)], binary=engine
    )
    out = []
    for path, scenario, answer in zip(cases, scenarios, answers, strict=True):
        assert not answer.get("error"), f"{path}: {answer.get('error')}"
        out.append((path, [expectation_problems(scenario, o["cycles"][0]) for o in answer["outcomes"]]))
    return out


def test_the_real_session_reproduces_every_conformance_fixture(engine: Path) -> None:
    """Each fixture's expectation, from Volcano's own test, holds on Volcano's own code: in every
    outcome of its repeats (a case whose result depended on a random tie would show two)."""
    wrong = {
        str(path.relative_to(CONFORMANCE)): problems
        for path, outcomes in _conformance_answers(engine, CASES)
        for problems in outcomes
        if problems
    }
    assert len(CASES) >= 90
    assert not wrong, wrong


def test_the_model_and_volcano_agree_on_every_fixture(engine: Path) -> None:
    """Side by side on the fixtures, beyond what each upstream test asserts: the same number of
    binds, the same evictions and the same pipelined jobs; the bind map too where one of Volcano's
    outcomes has it (the cases that assert only a count leave the nodes to random ties)."""
    from tests.whatif.test_conformance import run

    scenarios = [yaml.safe_load(p.read_text()) for p in CASES]
    answers = run_cases(
        [scenario_case(str(p), s, repeat=4) for p, s in zip(CASES, scenarios, strict=True)], binary=engine
    )
    differ = {}
    for path, scenario, answer in zip(CASES, scenarios, answers, strict=True):
        model = run(scenario)
        pipelined = {job.uid for job in model.jobs.values() if any(t.status == PIPELINED for t in job.tasks)}
        cycles = [o["cycles"][0] for o in answer["outcomes"]]
        alike = [
            c
            for c in cycles
            if len(c["binds"]) == len(model.binds)
            and Counter(c["evictions"]) == Counter(model.evictions)
            and set(c["pipelined"]) == pipelined
        ]
        exact = any(c["binds"] == model.binds for c in alike)
        minimal = "MinimalBindCheck" in str(scenario["expect"].get("other", ""))
        if not alike or not (exact or minimal or answer["random"]):
            differ[str(path.relative_to(CONFORMANCE))] = (model.binds, model.evictions, cycles)
    assert not differ, differ


def test_a_wrong_expectation_is_caught(engine: Path) -> None:
    """The check can fail: a fixture that expects no eviction where upstream evicts disagrees."""

    def expect_nothing(scenario: dict[str, Any]) -> dict[str, Any]:
        return {**scenario, "expect": {**scenario["expect"], "evicted": [], "evictCount": 0}}

    case = CONFORMANCE / "preempt" / "preempt-low-priority-same-queue.yaml"
    [(_, outcomes)] = _conformance_answers(engine, [case], expect_nothing)
    assert all(problems for problems in outcomes)


def test_a_random_tie_is_reported_as_such(engine: Path) -> None:
    """Two equal nodes for one pod: Volcano picks at random (`SelectBestNodeAndScore`), and the
    answer over enough repeats says the outcome is random (each repeat has a 1/2 chance)."""
    scenario = {
        "policy": {"actions": ["allocate"], "tiers": [[{"name": "predicates", "enablePredicate": True}]]},
        "queues": [{"name": "q1", "weight": 1}],
        "nodes": [{"name": f"n{i}", "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}} for i in (1, 2)],
        "podGroups": [{"name": "pg", "namespace": "ns", "queue": "q1", "minMember": 1, "phase": "Inqueue"}],
        "pods": [{"name": "p", "namespace": "ns", "group": "pg", "requests": {"cpu": "1", "memory": "1Gi"}}],
    }
    [answer] = run_cases([scenario_case("tie", scenario, repeat=16)], binary=engine)
    assert answer["random"] is True
    assert {o["pods"]["ns/p"] for o in answer["outcomes"]} == {"n1", "n2"}


def test_a_bind_sent_before_a_later_action_pipelines_the_task_is_waited_for(engine: Path) -> None:
    """Generated cluster 1790 (`tests/whatif/clusters.py`): allocate sends pods of two jobs to bind,
    then a later action's simulation pipelines them in the same session, so the session ends
    without them in Binding while the cache has sent their binds. The harness counts what the
    cache sent; counting the session's Binding tasks lost those binds to the next cycle, which
    then waited for binds that had already arrived (most runs of this cluster)."""
    objects, policy, hierarchy = build(random.Random(1790))
    case = volcano_case("1790", objects, policy_conf(policy, hierarchy), 24)
    [answer] = run_cases([case], binary=engine)
    assert not answer.get("error"), answer["error"]
    assert sum(outcome["runs"] for outcome in answer["outcomes"]) == 24


def _aicloud(committed_render: Any) -> Any:
    return committed_render("aicloud-a")


@pytest.mark.parametrize(
    ("dump", "verdicts"),
    [
        ("idle", {"fits"}),
        ("tainted", {"never"}),
        ("aicloud-a-waits.yaml", {"waits"}),
        ("aicloud-a-full-queue.yaml", {"waits"}),
        ("aicloud-a-preempt.yaml", {"fits-after-eviction"}),
        ("aicloud-a-reclaim.yaml", {"fits-after-eviction"}),
    ],
)
def test_volcano_answers_the_example_cluster_as_the_model_does(
    engine: Path, committed_render: Any, tmp_path: Path, dump: str, verdicts: set[str]
) -> None:
    """The recorded situations of the example cluster: what Volcano's code decides is what the
    model says, model by model, victims alike in queue, priority, GPUs and action, in domains of
    one tier (equal leaf pairs are a random tie for Volcano, taken by name in the model)."""
    render = _aicloud(committed_render)
    named = {"idle": EMPTY, "tainted": tainted_dump(tmp_path) if dump == "tainted" else EMPTY}
    state = read_file(named.get(dump, DUMPS / dump))
    real = predict_with_volcano(state, render.spec, render.rendered, repeat=1)
    model = predict(state, render.spec, render.rendered)
    assert real.engine == "volcano" and model.engine == "model"
    assert {v.verdict for v in real.verdicts} == verdicts
    for got, modelled in zip(real.verdicts, model.verdicts, strict=True):
        assert (got.model, got.verdict) == (modelled.model, modelled.verdict)
        shapes = Counter((v.queue, v.priority, v.gpus, v.action) for v in got.victims)
        assert shapes == Counter((v.queue, v.priority, v.gpus, v.action) for v in modelled.victims)
        tiers = {render.spec.topology.domains[v.domain].tier for v in [*got.victims, *modelled.victims]}
        assert len(tiers) <= 1
        assert not got.note, got.note
    if "reclaim" in dump:
        assert {v.action for verdict in real.verdicts for v in verdict.victims} == {"reclaim"}


def test_whatif_says_which_engine_answered(engine: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = DUMPS / "aicloud-a-full-queue.yaml"
    code = main(["whatif", "--stack", "aicloud-a", "--from", str(dump), "--json", "--engine", "volcano"])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    assert code == 1 and data["engine"] == "volcano"
    assert {m["verdict"] for m in data["models"]} == {"waits"}
    code = main(["explain", "qwen8b-preemptor", "--stack", "aicloud-a", "--from", str(dump), "--engine", "volcano"])
    out = capsys.readouterr().out
    assert code == 1 and "Answered by Volcano's own scheduling code" in out and "capability" in out


def test_without_go_the_model_answers_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A laptop without Go: no built program in the cache, no `go` on PATH."""
    monkeypatch.setenv("VOLCANO_PLATFORM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    dump = DUMPS / "aicloud-a-full-queue.yaml"
    code = main(["whatif", "--stack", "aicloud-a", "--from", str(dump), "--json"])
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["engine"] == "model"
    assert "note: the model answers: Go is not installed" in captured.err
    assert main(["whatif", "--stack", "aicloud-a", "--from", str(dump), "--engine", "volcano"]) == 2
    assert "--engine volcano: Go is not installed" in capsys.readouterr().err


def test_auto_never_builds_the_engine_inside_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Go is here and the engine is not built: `auto` says how to build it and the model answers at
    once, instead of a silent build of minutes."""
    if not go_available():
        pytest.skip("needs Go on PATH")
    cache = tmp_path / "cache"
    monkeypatch.setenv("VOLCANO_PLATFORM_CACHE", str(cache))
    dump = DUMPS / "aicloud-a-full-queue.yaml"
    code = main(["whatif", "--stack", "aicloud-a", "--from", str(dump), "--json"])
    captured = capsys.readouterr()
    assert code == 1 and json.loads(captured.out)["engine"] == "model"
    assert "note: the model answers: Volcano's scheduling code is not built here; `make volcano-session`" in (
        captured.err
    )
    assert not binary_path().exists()


def _dev_with_a_leaf_gang(labels_enabled: bool) -> dict[str, Any]:
    """The dev stack (explicit HyperNodes: the leaf selects its nodes by label) and a model of two
    nodes held inside the leaf."""
    raw = stack_raw("dev")
    raw["topology"]["nodeLabels"] = {"enabled": labels_enabled}
    raw["models"]["wide"] = {
        **raw["models"]["qwen3-0-6b"],
        "nodesPerReplica": 2,
        "resources": {"gpus": 2, "cpu": 4, "memory": "16Gi"},
        "engine": {"tensorParallelSize": 2, "pipelineParallelSize": 2},
        "topology": {"mode": "hard", "highestTier": 1},
    }
    return raw


@pytest.mark.parametrize(("labels_enabled", "verdict"), [(True, "fits"), (False, "never")])
def test_before_the_first_up_the_nodes_carry_the_labels_the_stack_sets(
    engine: Path, render_raw: Any, labels_enabled: bool, verdict: str
) -> None:
    """A cluster before its first `up`: the nodes have none of the stack's tier labels, and the
    stack's leaf HyperNode selects its nodes by that label. The stack labels them
    (`topology.nodeLabels`), so both engines see the gang fit, as it fitted on the real cluster
    (`tests/e2e/test_disaggregated.py`); when the labels are the operator's to set and nobody has,
    the leaf is empty and both say never."""
    render = render_raw(_dev_with_a_leaf_gang(labels_enabled))
    state = state_from_objects([{"apiVersion": "v1", "kind": "Node", **node} for node in dev_nodes()], "fresh")
    real = predict_with_volcano(state, render.spec, render.rendered, repeat=1)
    model = predict(state, render.spec, render.rendered)
    assert {v.model: v.verdict for v in real.verdicts}["wide"] == verdict
    assert {v.model: v.verdict for v in model.verdicts}["wide"] == verdict
