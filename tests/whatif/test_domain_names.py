"""The what-if names a domain the way the stack does: the stack's domain (or a pool and the label
value its nodes share), with the HyperNode's generated name beside it where it differs."""

from __future__ import annotations

import dataclasses

import pytest

from live.cluster_state import read_file
from offline.render import render_stack
from tests.conftest import PROJECT_DIR
from whatif.predict import predict

pytestmark = pytest.mark.slow  # what-if runs on recorded clusters

FIXTURES = PROJECT_DIR / "tests" / "fixtures" / "cluster"
LEAF = "topology.aicloud/leaf-pair"


def _hypernode(name: str, tier: int, members: list[tuple[str, str]], tier_name: str) -> dict[str, object]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": {"volcano.sh/network-topology-source": "label"}},
        "spec": {
            "tier": tier,
            "tierName": tier_name,
            "members": [{"type": kind, "selector": {"exactMatch": {"name": member}}} for kind, member in members],
        },
    }


def _discovered(state: object, leaf_key: str, spine_key: str) -> list[dict[str, object]]:
    """The HyperNodes label discovery would have built, under its own random names."""
    leaves: dict[str, list[str]] = {}
    for node in state.nodes:  # type: ignore[attr-defined]
        value = (node["metadata"].get("labels") or {}).get(leaf_key)
        if value:
            leaves.setdefault(value, []).append(node["metadata"]["name"])
    found = [
        _hypernode(f"hypernode-gpu-fabric-tier1-{index:05d}", 1, [("Node", n) for n in names], leaf_key)
        for index, (value, names) in enumerate(sorted(leaves.items()))
    ]
    found.append(
        _hypernode(
            "hypernode-gpu-fabric-tier2-00000", 2, [("HyperNode", h["metadata"]["name"]) for h in found], spine_key
        )  # type: ignore[index]
    )
    return found


def test_a_victims_domain_is_the_stacks_leaf_with_the_hypernode_beside_it() -> None:
    state = read_file(FIXTURES / "whatif" / "aicloud-a-preempt.yaml")
    state = dataclasses.replace(state, hyper_nodes=_discovered(state, LEAF, "topology.aicloud/spine-pair"))
    result = render_stack(PROJECT_DIR, "aicloud-a")
    verdict = next(v for v in predict(state, result.spec, result.rendered).verdicts if v.model == "qwen8b-preemptor")
    assert [v.domain for v in verdict.victims] == ["leafpair34 (HyperNode hypernode-gpu-fabric-tier1-00001)"]


def test_a_domain_of_a_pools_shape_is_the_pool_and_its_label_value() -> None:
    state = read_file(FIXTURES / "eks" / "aicloud-eks-fresh.yaml")
    result = render_stack(PROJECT_DIR, "aicloud-eks")
    verdict = next(v for v in predict(state, result.spec, result.rendered).verdicts if v.model == "llama-405b")
    assert verdict.domain.startswith("pool h100-a, topology.k8s.aws/network-node-layer-3=nn-"), verdict.domain
    leaf = "topology.k8s.aws/network-node-layer-3"
    state = dataclasses.replace(state, hyper_nodes=_discovered(state, leaf, "topology.k8s.aws/network-node-layer-2"))
    verdict = next(v for v in predict(state, result.spec, result.rendered).verdicts if v.model == "llama-405b")
    assert verdict.domain.startswith("pool h100-a, topology.k8s.aws/network-node-layer-3=nn-")
    assert verdict.domain.endswith(")") and "(HyperNode hypernode-gpu-fabric-tier1-" in verdict.domain


def test_the_summary_names_domains_as_the_what_if_does() -> None:
    """The summary's domain table holds the stack's names the what-if writes, and says how a
    HyperNode Volcano named, or a domain of a pool's shape, is written there."""
    from offline.summary import render_summary

    state = read_file(FIXTURES / "whatif" / "aicloud-a-preempt.yaml")
    state = dataclasses.replace(state, hyper_nodes=_discovered(state, LEAF, "topology.aicloud/spine-pair"))
    result = render_stack(PROJECT_DIR, "aicloud-a")
    summary = render_summary(result.spec, result.rendered)
    verdict = next(v for v in predict(state, result.spec, result.rendered).verdicts if v.model == "qwen8b-preemptor")
    domain = verdict.victims[0].domain.split(" (HyperNode ")[0]
    assert f"| {domain} | 1 |" in summary
    assert "a named domain is the HyperNode holding exactly its nodes" in summary
    assert "(`spinepair12 (HyperNode hypernode-…)`)" in summary

    eks = render_stack(PROJECT_DIR, "aicloud-eks")
    assert "`whatif` and `explain` name one `pool <pool>, <tier label>=<value>`" in render_summary(
        eks.spec, eks.rendered
    )
    dev = render_stack(PROJECT_DIR, "dev")
    assert "Each named domain is a HyperNode of the same name." in render_summary(dev.spec, dev.rendered)


def test_cluster_words_cannot_format_the_comment() -> None:
    """Reasons, notes and the source hold what the cluster says (node names, Volcano's messages):
    line breaks, pipes and backticks in them end neither the table row nor a code span."""
    from whatif.predict import WAITS, Prediction, Verdict
    from whatif.report import markdown

    said = "Volcano says: `0/3 nodes | ## taken\n@team`"
    verdict = Verdict("m", WAITS, reason=said, note="tie\n| x")
    text = markdown(Prediction("dev", "dump ``` .json", "p", [verdict], [], []))
    row = next(line for line in text.splitlines() if line.startswith("| `m` |"))
    assert row.endswith("| - |") and "\\|" in row and "\n" not in row
    assert "## taken" in row and not any(line.startswith("## ") for line in text.splitlines())
    assert "on ````dump ``` .json````" in text
