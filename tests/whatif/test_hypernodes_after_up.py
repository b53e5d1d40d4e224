"""The HyperNodes both engines see after `pulumi up` (`whatif/hypernodes.py`): a snapshot's
HyperNodes do not replace the stack's; those Volcano's label discovery made are made again when
nodes are added, so a hard-topology gang on a pool that grows is placed in the new nodes' domains."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import pytest

from live.cluster_state import ClusterState, read_file
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, stack_raw, write_stack
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.discovery import discover
from whatif.hypernodes import LABEL_DISCOVERY, SOURCE_LABEL, after_up
from whatif.pool_growth import grown, with_pool_growth
from whatif.predict import FITS, WAITS, predict
from whatif.volcano.predict import predict_with_volcano

pytestmark = pytest.mark.slow  # renders the cloud example and reads its 91-node cluster

FRESH = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "eks" / "aicloud-eks-fresh.yaml"


def _manifest(name: str, tier: int, members: list[tuple[str, str]], source: str | None) -> dict[str, Any]:
    labels = {SOURCE_LABEL: source} if source else {}
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "tier": tier,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": member}}} for kind, member in members],
        },
    }


def _discovered_by_volcano(state: ClusterState, tiers: tuple[str, ...]) -> list[dict[str, Any]]:
    """What label discovery made of the snapshot's nodes, under names of Volcano's kind."""
    nodes = ((n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in state.nodes)
    found = discover(nodes, tiers)
    names = {domain: f"hypernode-tier{d.tier}-{index:05d}" for index, (domain, d) in enumerate(sorted(found.items()))}
    return [
        _manifest(
            names[domain],
            d.tier,
            [("Node" if d.tier == 1 else "HyperNode", m if d.tier == 1 else names[m]) for m in d.children],
            LABEL_DISCOVERY,
        )
        for domain, d in found.items()
    ]


def _stack(tmp_path: Path) -> Any:
    """The 405B model (two nodes a replica, hard in one tier-1 domain) moved to the pool the
    autoscaler grows, with more replicas than its nodes hold now."""
    raw = stack_raw("aicloud-eks")
    raw["models"]["llama-405b"].update(pools=["h100-b"], replicas=12)
    return render_stack(PROJECT_DIR, "grow", write_stack(tmp_path / "Pulumi.grow.yaml", raw))


def _leaves(hyper_nodes: list[dict[str, Any]]) -> dict[str, set[str]]:
    return {
        h["metadata"]["name"]: {m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]}
        for h in hyper_nodes
        if h["spec"]["tier"] == 1
    }


def test_discovered_hypernodes_keep_volcanos_names_while_no_node_is_new(tmp_path: Path) -> None:
    result = _stack(tmp_path)
    state = read_file(FRESH)
    volcanos = _discovered_by_volcano(state, result.spec.topology.tiers)
    state = dataclasses.replace(state, hyper_nodes=volcanos)
    nodes = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in state.nodes]
    assert after_up(state, result.spec, result.rendered, nodes) == volcanos


def test_nodes_a_pool_adds_are_in_the_hypernodes_discovery_makes_again(tmp_path: Path) -> None:
    result = _stack(tmp_path)
    state = read_file(FRESH)
    state = dataclasses.replace(state, hyper_nodes=_discovered_by_volcano(state, result.spec.topology.tiers))
    bigger = grown(state, result.spec, "h100-b", 8)
    nodes = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in bigger.nodes]
    leaves = _leaves(after_up(bigger, result.spec, result.rendered, nodes))
    added = {f"h100-b-grown-{i}" for i in range(1, 9)}
    assert added in leaves.values()  # one new tier-1 domain of the pool's eight nodes
    assert set().union(*leaves.values()) >= {name for name, _ in nodes if name.startswith("h100-b")}


def test_a_hand_made_hypernode_stays_and_the_stacks_are_added(tmp_path: Path) -> None:
    result = _stack(tmp_path)
    state = read_file(FRESH)
    hand_made = _manifest("rack-7", 1, [("Node", state.nodes[0]["metadata"]["name"])], None)
    state = dataclasses.replace(state, hyper_nodes=[hand_made])
    nodes = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in state.nodes]
    merged = after_up(state, result.spec, result.rendered, nodes)
    assert merged[0] == hand_made
    assert len(merged) > 1  # and the domains the stack's topology makes discovery build


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_a_hard_gang_on_a_growing_pool_waits_for_nodes_not_forever(tmp_path: Path, engine: str) -> None:
    """Before, a snapshot's HyperNodes replaced the stack's: the grown nodes were in no HyperNode,
    the hard gang fit nowhere even at the pool's maximum, and the what-if said `never`."""
    answer: Any = predict
    if engine == "volcano":
        volcano_engine()
        answer = functools.partial(predict_with_volcano, repeat=1)
    result = _stack(tmp_path)
    state = read_file(FRESH)
    state = dataclasses.replace(state, hyper_nodes=_discovered_by_volcano(state, result.spec.topology.tiers))
    prediction = with_pool_growth(
        answer(state, result.spec, result.rendered), state, result.spec, result.rendered, answer
    )
    verdict = next(v for v in prediction.verdicts if v.model == "llama-405b")
    assert verdict.verdict == WAITS
    assert verdict.reason.startswith("waits for nodes: fits once pool `h100-b` grows by ")
    grow = int(verdict.reason.split("grows by ")[1].split(" ")[0])
    after = answer(grown(state, result.spec, "h100-b", grow), result.spec, result.rendered)
    assert next(v for v in after.verdicts if v.model == "llama-405b").verdict == FITS
