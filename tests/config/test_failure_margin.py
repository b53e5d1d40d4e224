"""The failure margin (`cluster.failureMargin`): guarantees that break and multi-node replicas left
without a domain once a node (or a tier-1 domain) is lost, warned about by default and refused when
the stack asks for the margin."""

from __future__ import annotations

from typing import Any

import pytest

from config.errors import Problem
from tests.conftest import load, problems_of, stack_raw

GUARANTEE = "tenants.team-a.queue.guarantee[nvidia.com/gpu]"


def _dev(guarantee: int, margin: str | None = None, leaves: int = 1) -> dict[str, Any]:
    """The dev cluster (4 nodes of 2 GPUs) with team-a guaranteed `guarantee` GPUs, its nodes in
    `leaves` leaf domains."""
    raw = stack_raw("dev")
    raw["tenants"]["team-a"]["queue"].update(deserved={"nvidia.com/gpu": 8}, guarantee={"nvidia.com/gpu": guarantee})
    if leaves == 2:
        raw["topology"]["domains"] = {"leaf-a": {"nodes": ["dev-gpu-[1-3]"]}, "leaf-b": {"nodes": ["dev-gpu-4"]}}
    if margin is not None:
        raw["cluster"]["failureMargin"] = margin
    return raw


def _at(problems: list[Problem], path: str) -> Problem | None:
    return next((p for p in problems if p.path == path), None)


def test_a_guarantee_a_node_loss_breaks_is_warned_about_by_default() -> None:
    warning = _at(load(_dev(8)).warnings, GUARANTEE)
    assert warning is not None and "after losing one node (2) 6 remain" in warning.message
    assert "`cluster.failureMargin: none`" in warning.fix
    assert _at(load(_dev(6)).warnings, GUARANTEE) is None, "6 of 8 survive a node"


def test_a_margin_the_stack_asks_for_is_an_error_and_none_turns_it_off() -> None:
    error = _at(problems_of(_dev(8, "node")), GUARANTEE)
    assert error is not None and error.severity == "error"
    assert _at(load(_dev(8, "none")).warnings, GUARANTEE) is None


def test_a_domain_margin_counts_the_largest_leaf() -> None:
    """Three nodes in one leaf, one in the other: losing the larger leaf leaves 2 GPUs."""
    assert _at(load(_dev(6, leaves=2)).warnings, GUARANTEE) is None, "a node's margin holds"
    error = _at(problems_of(_dev(4, "domain", leaves=2)), GUARANTEE)
    assert error is not None and "its largest tier-1 domain (`leaf-a`, 6) 2 remain" in error.message
    load(_dev(2, "domain", leaves=2))


def _gke_405b(replicas: int, margin: str | None = None) -> dict[str, Any]:
    """The EKS example's 405B model (2 nodes per replica inside one leaf of 8 nodes) on a pool of
    two leaves: 8 replica slots."""
    raw = stack_raw("aicloud-eks")
    raw["pools"]["h100-a"].update(nodes=16, topology={"domains": [2, 1, 1], "nodesPerDomain": 8})
    raw["models"]["llama-405b"]["replicas"] = replicas
    raw["tenants"]["pretrain"]["queue"].update(capability={"nvidia.com/gpu": 128}, deserved={"nvidia.com/gpu": 64})
    if margin is not None:
        raw["cluster"]["failureMargin"] = margin
    return raw


@pytest.mark.parametrize(("replicas", "warned"), [(8, True), (7, False)])
def test_a_hard_topology_model_keeps_a_spare_domain(replicas: int, warned: bool) -> None:
    warning = _at(load(_gke_405b(replicas), "aicloud-eks").warnings, "models.llama-405b.replicas")
    assert (warning is not None) == warned
    if warning is not None:
        assert "room for 8; after losing a node 7 remain" in warning.message


def test_a_spare_domain_the_stack_asks_for_is_an_error() -> None:
    error = _at(problems_of(_gke_405b(8, "node")), "models.llama-405b.replicas")
    assert error is not None and error.severity == "error"
    assert _at(load(_gke_405b(8, "none"), "aicloud-eks").warnings, "models.llama-405b.replicas") is None


def test_guarantees_are_held_per_accelerator_type() -> None:
    """With pools of several types the guarantees of one type are held to that type's pools."""
    raw = stack_raw("aicloud-eks")
    raw["pools"]["l40s"]["maxNodes"] = 8  # 32 L40S at most
    queue = raw["tenants"]["search"]["queue"]
    queue["byType"]["l40s"].update(guarantee={"nvidia.com/gpu": 32})
    queue.update(guarantee={"nvidia.com/gpu": 32})
    warnings = load(raw, "aicloud-eks").warnings
    typed = [w for w in warnings if "the `l40s` guarantees add up to 32 of 32" in w.message]
    assert typed and "after losing one node (4) 28 remain" in typed[0].message
