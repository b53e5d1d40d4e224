"""`topology.svg` stays readable from a 4-node dev cluster to 10,000 nodes: a bounded aspect ratio,
no text below the minimum size, small files, and every domain that matters drawn and named."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from config.spec.platform import PlatformSpec
from offline.svg import MAX_WIDTH, MIN_FONT, render_svg
from tests.conftest import PROJECT_DIR, load, stack_raw

SVG = "{http://www.w3.org/2000/svg}"


def _generated(pods: int, spines_per_pod: int, leaves_per_spine: int, nodes_per_leaf: int) -> dict[str, Any]:
    """A dev-like stack on a 3-tier topology of the given shape, with one hard-constrained
    two-node model and one that does not fit its leaf (so one leaf is short)."""
    raw = stack_raw("dev")
    domains: dict[str, Any] = {}
    for p in range(pods):
        spines: dict[str, Any] = {}
        for s in range(spines_per_pod):
            leaves = {
                f"p{p}-s{s}-leaf{leaf}": {"nodes": [f"gpu-p{p}-s{s}-l{leaf}-[1-{nodes_per_leaf}]"]}
                for leaf in range(leaves_per_spine)
            }
            spines[f"p{p}-spine{s}"] = {"domains": leaves}
        domains[f"pod{p}"] = {"domains": spines}
    raw["cluster"]["gpusPerNode"] = 8
    raw["topology"] = {"tiers": ["example.com/leaf", "example.com/spine", "example.com/pod"], "domains": domains}
    raw["tenants"]["team-a"]["queue"]["capability"] = {"nvidia.com/gpu": 1_000_000}
    model = raw["models"]["qwen3-0-6b"]
    raw["models"]["big-gang"] = {
        **model,
        "servedModelName": "big",
        "nodesPerReplica": 2,
        "replicas": 2,
        "resources": {"gpus": 8, "cpu": 8, "memory": "64Gi"},
        "topology": {"mode": "hard", "highestTier": 1},
    }
    return raw


def _svg(spec: PlatformSpec) -> tuple[str, ET.Element]:
    text = render_svg(spec)
    return text, ET.fromstring(text)


def _outline(group: ET.Element) -> str | None:
    box = group.find(f"{SVG}rect")
    return None if box is None else box.get("stroke")


def _named(root: ET.Element) -> set[str]:
    return {g.get("data-name", "") for g in root.iter(f"{SVG}g")}


def _check_readable(text: str, root: ET.Element) -> tuple[float, float]:
    assert root.tag == f"{SVG}svg"
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    assert root.get("viewBox") == f"0 0 {width:.0f} {height:.0f}", "drawn at its natural size"
    assert 0.5 <= width / height <= 3, f"aspect {width / height:.2f}"
    sizes = [float(t.get("font-size", 0)) for t in root.iter(f"{SVG}text")]
    assert sizes and min(sizes) >= MIN_FONT
    assert len(text.encode()) < 1_000_000
    return width, height


@pytest.mark.parametrize("stack", ["dev", "aicloud-a", "aicloud-b"])
def test_the_example_pictures_are_readable(stack: str, committed_render: Any) -> None:
    spec = committed_render(stack).spec
    text, root = _svg(spec)
    _check_readable(text, root)
    assert spec.topology is not None
    assert _named(root) >= set(spec.topology.domains)  # small clusters: every domain drawn


def test_the_example_cluster_shows_capacity_and_demand(committed_render: Any) -> None:
    _, root = _svg(committed_render("aicloud-a").spec)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "tier 1 · 64 nodes · 512 GPUs" in texts and "needs 16 of 512 GPUs" in texts


def test_a_256_node_cluster_is_a_readable_block_not_a_strip() -> None:
    """The shape that used to be a 7,192 x 422 strip: 32 leaves under 8 spines and 2 pods."""
    spec = load(_generated(pods=2, spines_per_pod=4, leaves_per_spine=4, nodes_per_leaf=8))
    assert spec.topology is not None and len(spec.topology.node_gpus) == 256
    text, root = _svg(spec)
    width, _ = _check_readable(text, root)
    assert width <= MAX_WIDTH
    leaves = {d.name for d in spec.topology.at_tier(1)}
    assert leaves <= _named(root), "every leaf is drawn at this size"
    labels = {t.text for t in root.iter(f"{SVG}text")}
    assert leaves <= labels, "and named in full"


def test_hard_models_are_labelled_and_listed() -> None:
    spec = load(_generated(pods=1, spines_per_pod=2, leaves_per_spine=2, nodes_per_leaf=4))
    _, root = _svg(spec)
    planned = {d for d in spec.placements["big-gang"].planned_gpus if spec.topology.domains[d].tier == 1}  # type: ignore[union-attr]
    for group in root.iter(f"{SVG}g"):
        labels = [t.text or "" for t in group.findall(f"{SVG}text")]
        assert any(t.startswith("hard: big-gang") for t in labels) == (group.get("data-name") in planned)
    legend = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert f"big-gang: 2 × 2 pods, tier 1 (example.com/leaf) → {', '.join(sorted(planned))}" in legend


def test_a_short_domain_is_outlined_and_named() -> None:
    """Three one-gang models that each fit a leaf alone, on two leaves: the third has no room left
    and its leaf is short."""
    raw = _generated(pods=1, spines_per_pod=1, leaves_per_spine=2, nodes_per_leaf=2)
    raw["models"]["big-gang"]["replicas"] = 1
    for name in ("second-gang", "third-gang"):
        raw["models"][name] = {**raw["models"]["big-gang"], "servedModelName": name}
    spec = load(raw)
    _, root = _svg(spec)
    short = [g for g in root.iter(f"{SVG}g") if _outline(g) == "#d62728"]
    assert short and all(g.get("data-name") for g in short)
    assert any("SHORT" in (t.text or "") for g in short for t in g.iter(f"{SVG}text"))


def test_ten_thousand_nodes_stay_readable_with_leaves_summarised() -> None:
    sys.path.insert(0, str(PROJECT_DIR / "bench"))
    import scale

    spec = load(scale.synthetic_stack(scale.SIZES["huge"]))
    assert spec.topology is not None and len(spec.topology.node_gpus) == 10_000
    text, root = _svg(spec)
    width, _ = _check_readable(text, root)
    assert width <= MAX_WIDTH
    named = _named(root)
    # Leaves are summarised in their spine, but every spine and every leaf that is short or holds a
    # hard-constrained model is still drawn and named.
    assert {d.name for d in spec.topology.at_tier(2)} | {d.name for d in spec.topology.at_tier(3)} <= named
    hard_leaves = {
        d
        for p in spec.placements.values()
        if p.mode == "hard"
        for d in p.planned_gpus
        if spec.topology.domains[d].tier == 1
    }
    assert hard_leaves and hard_leaves <= named
    assert len(named & {d.name for d in spec.topology.at_tier(1)}) < len(spec.topology.at_tier(1))
    assert re.search(r"500 leaves summarised per tier-2 domain", text)
    assert any((t.text or "").startswith("10 leaves; fullest ") for t in root.iter(f"{SVG}text"))


def test_svg_without_topology() -> None:
    spec = load(stack_raw("dev") | {"topology": {}})
    text, root = _svg(spec)
    assert "no network topology" in text and root.get("viewBox")
