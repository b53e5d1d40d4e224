"""How the scheduler evicts, checked against how Volcano v1.15.1 walks its tiers for victims
(`Session.Preemptable`/`Reclaimable`/`UnifiedEvictable`, pkg/scheduler/framework/session_plugins.go):
the queue plugin shares gang's tier, no later tier chooses victims on its own, and priority's
starving test (not gang's) decides who may preempt."""

from __future__ import annotations

from typing import Any

import pytest

from config.spec.scheduler_conf import eviction_style, scheduler_conf
from tests.conftest import load, mutate, problems_of, stack_raw

SEED = stack_raw("aicloud-a")
DEV = stack_raw("dev")


def _with_scheduler(raw: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return mutate(raw, lambda r: r.setdefault("volcano", {}).setdefault("scheduler", {}).update(settings))


def _tiers(raw: dict[str, Any]) -> list[list[str]]:
    spec = load(raw)
    conf = scheduler_conf(spec.config.volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models)
    return [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]]


@pytest.mark.parametrize("queue_plugin", ["capacity", "proportion"])
def test_the_queue_plugin_is_generated_into_gangs_tier(queue_plugin: str) -> None:
    raw = _with_scheduler(DEV, queuePlugin=queue_plugin)
    first, second = _tiers(raw)
    assert first == ["priority", "gang", "conformance", queue_plugin]
    assert queue_plugin not in second


@pytest.mark.parametrize(
    ("settings", "path"),
    [
        ({"plugins": {"capacity": {"tier": 2}}}, "volcano.scheduler.plugins.capacity.tier"),
        ({"plugins": {"gang": {"tier": 2}}}, "volcano.scheduler.plugins.gang.tier"),
        (
            {"eviction": "pod", "plugins": {"capacity": {"tier": 3}}},
            "volcano.scheduler.plugins.capacity.tier",
        ),
    ],
)
def test_a_queue_plugin_outside_gangs_tier_is_refused_with_the_fix(settings: dict[str, Any], path: str) -> None:
    problems = [p for p in problems_of(_with_scheduler(SEED, **settings)) if p.path == path]
    assert problems, f"expected an error at {path}"
    assert "first tier that yields any" in problems[0].message
    assert "remove the `tier` override" in problems[0].fix


def test_without_eviction_actions_the_tiers_do_not_matter() -> None:
    raw = _with_scheduler(DEV, actions=["enqueue", "allocate", "backfill"], plugins={"capacity": {"tier": 2}})
    assert [w for w in load(raw).warnings if "tier" in w.path] == []


def test_a_later_tier_that_chooses_victims_alone_is_warned_about() -> None:
    raw = _with_scheduler(DEV, plugins={"drf": {"flags": {"enablePreemptable": True}}})
    (warning,) = [w for w in load(raw).warnings if w.path == "volcano.scheduler.plugins.drf"]
    assert "decides alone on every candidate" in warning.message and "`enablePreemptable: false`" in warning.fix


def test_gangs_own_starving_test_is_off_and_turning_it_on_is_warned_about() -> None:
    spec = load(DEV)
    conf = scheduler_conf(spec.config.volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models)
    gang = next(p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "gang")
    assert gang["enableJobStarving"] is False
    raw = _with_scheduler(DEV, plugins={"gang": {"flags": {"enableJobStarving": True}}})
    (warning,) = [w for w in load(raw).warnings if w.path.endswith("gang.flags.enableJobStarving")]
    assert "other replicas wait for free capacity" in warning.message


def test_gang_reclaim_with_proportion_is_refused_and_auto_falls_back_to_pod_eviction() -> None:
    raw = _with_scheduler(SEED, queuePlugin="proportion", eviction="gang")
    (problem,) = [p for p in problems_of(raw) if p.path == "volcano.scheduler.eviction"]
    assert "only capacity filters gang-aware reclaim" in problem.message
    auto = load(_with_scheduler(SEED, queuePlugin="proportion"))
    assert eviction_style(auto.config.volcano, auto.plans_multi_node_models) == "pod"
    assert eviction_style(load(SEED).config.volcano, True) == "gang"


def test_a_removed_switch_is_refused_with_the_reason_and_a_typo_gets_the_nearest_name() -> None:
    removed = _with_scheduler(DEV, plugins={"drf": {"flags": {"enableNamespaceOrder": True}}})
    (problem,) = problems_of(removed)
    assert problem.path == "volcano.scheduler.plugins.drf.flags.enableNamespaceOrder"
    assert "removed from Volcano in v1.8" in problem.message and problem.fix == "remove `enableNamespaceOrder`"
    typo = _with_scheduler(DEV, plugins={"gang": {"flags": {"enablePreemtable": False}}})
    (problem,) = problems_of(typo)
    assert problem.path == "volcano.scheduler.plugins.gang.flags.enablePreemtable"
    assert problem.fix == "did you mean `enablePreemptable`?"


def test_topology_constrained_gangs_under_legacy_preempt_are_warned_that_they_never_preempt() -> None:
    # The seed's multi-node model has a soft constraint on its sub-groups; legacy `preempt` skips
    # every job that carries one.
    legacy = load(_with_scheduler(SEED, eviction="pod"))
    (warning,) = [w for w in legacy.warnings if w.path == "volcano.scheduler.eviction" and "never preempt" in w.message]
    assert "qwen2-72b-tenanta" in warning.message and "`eviction: gang`" in warning.fix
    assert not [w for w in load(SEED).warnings if "never preempt" in w.message]
