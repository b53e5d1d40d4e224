"""The engine against scenarios from Volcano v1.15.1's own tests (`tests/whatif/conformance/`).

Each case runs one session with the case's actions in order and is checked as upstream's
`pkg/scheduler/uthelper/helper.go` `CheckAll` checks it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from whatif.scenario import session_of
from whatif.scheduler.engine import closing_phase, open_session, run_cycle
from whatif.scheduler.model import PIPELINED
from whatif.scheduler.session import Session

HERE = Path(__file__).parent / "conformance"
CASES = sorted(HERE.glob("*/*.yaml"))
KNOWN_DISAGREEMENTS: dict[str, str] = {}
"""Case file -> why the engine differs (each also in docs/decisions.md)."""
MIN_CASES, MIN_AGREEMENT = 40, 0.95


def run(scenario: dict[str, Any]) -> Session:
    session = session_of(scenario)
    policy = scenario["policy"]
    session.configurations = {c["name"]: dict(c.get("arguments") or {}) for c in policy.get("configurations") or []}
    open_session(session, policy["tiers"], defaults=False)
    run_cycle(session, policy["actions"])
    return session


def disagreements(scenario: dict[str, Any], session: Session) -> list[str]:
    expect = scenario["expect"]
    found = []
    minimal = "MinimalBindCheck" in str(expect.get("other", ""))
    if len(session.binds) != expect.get("bindCount", 0):
        found.append(f"binds {session.binds}, upstream expects {expect.get('bindCount', 0)}")
    elif expect.get("bind") and not minimal and session.binds != expect["bind"]:
        found.append(f"binds {session.binds}, upstream expects {expect['bind']}")
    if Counter(session.evictions) != Counter(expect.get("evicted") or []) or len(session.evictions) != expect.get(
        "evictCount", 0
    ):
        found.append(f"evictions {session.evictions}, upstream expects {expect.get('evicted') or []}")
    for job, nodes in (expect.get("pipelined") or {}).items():
        tasks = [t for t in session.jobs[job].tasks if t.status == PIPELINED] if job in session.jobs else []
        if not tasks or any(t.node not in nodes for t in tasks):
            found.append(f"{job} pipelined on {[t.node for t in tasks]}, upstream expects {nodes}")
    for job, phase in (expect.get("status") or {}).items():
        got = closing_phase(session, job) if job in session.jobs else None
        if got != phase:
            found.append(f"{job} phase {got}, upstream expects {phase}")
    if expect.get("bindsInHyperNode"):
        per_leaf: Counter[str] = Counter()
        for node in session.binds.values():
            leaf = next(h.name for h in session.hypernodes.values() if h.tier == 1 and node in h.nodes)
            per_leaf[leaf] += 1
        if sorted(per_leaf.values()) != sorted(expect["bindsInHyperNode"]):
            found.append(f"binds per HyperNode {dict(per_leaf)}, upstream expects {expect['bindsInHyperNode']}")
    return found


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return data


@pytest.mark.parametrize("path", CASES, ids=[str(p.relative_to(HERE)) for p in CASES])
def test_case_agrees_with_upstream(path: Path) -> None:
    name = str(path.relative_to(HERE))
    scenario = _load(path)
    found = disagreements(scenario, run(scenario))
    if name in KNOWN_DISAGREEMENTS:
        assert found, f"{name} now agrees with upstream: drop it from KNOWN_DISAGREEMENTS and docs/decisions.md"
        return
    source = scenario["source"]
    assert not found, f"{source['file']} {source['test']} {source.get('case', '')!r}: " + "; ".join(found)


def test_enough_cases_agree() -> None:
    assert len(CASES) >= MIN_CASES
    assert 1 - len(KNOWN_DISAGREEMENTS) / len(CASES) >= MIN_AGREEMENT
    assert all((HERE / name).exists() for name in KNOWN_DISAGREEMENTS)


def test_every_case_cites_its_upstream_test() -> None:
    for path in CASES:
        source = _load(path)["source"]
        assert source["tag"] == "v1.15.1" and source["file"].endswith("_test.go") and source["test"], path


def test_a_broken_engine_fails_the_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks can fail: with capacity's reclaim filter letting everything through, the cases
    that protect a queue's deserved share disagree."""
    from whatif.scheduler.queues import CapacityPlugin

    monkeypatch.setattr(CapacityPlugin, "_reclaim_filter", lambda self, tasks, legacy, reclaimer: list(tasks))
    scenario = _load(HERE / "capacity" / "flat-case9-scalar-only-deserved-not-reclaimed.yaml")
    assert disagreements(scenario, run(scenario))


PER_NODE = [p for p in CASES if "nodeScore" in _load(p)["expect"] or "predicateStatus" in _load(p)["expect"]]


@pytest.mark.parametrize("path", PER_NODE, ids=lambda p: str(p.relative_to(HERE)))
def test_per_node_scores_and_predicates_are_upstreams(path: Path) -> None:
    """Cases whose upstream test checks each (task, node) directly (`ssn.NodeOrderFn`,
    `ssn.PredicateFn`): the model's plugins give the same numbers and the same pass or fail."""
    scenario = _load(path)
    session = session_of(scenario)
    open_session(session, scenario["policy"]["tiers"], defaults=False)
    tasks = {t.uid: t for job in session.jobs.values() for t in job.tasks}
    expect = scenario["expect"]
    for uid, scores in (expect.get("nodeScore") or {}).items():
        found = {node: session.fw.node_score(tasks[uid], session.nodes[node]) for node in scores}
        assert found == pytest.approx({node: float(score) for node, score in scores.items()}), uid
    for uid, statuses in (expect.get("predicateStatus") or {}).items():
        found = {node: session.fw.predicate(tasks[uid], session.nodes[node]) is None for node in statuses}
        assert found == {node: status == "Success" for node, status in statuses.items()}, uid
