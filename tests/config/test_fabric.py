"""`topology.fabric`: a regular tree in a few lines renders exactly what its explicit form renders,
and the irregular parts written beside it merge in by name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import load, mutate, paths_of, problems_of, stack_raw

DEV = stack_raw("dev")
TIERS = ["t.example.com/leaf", "t.example.com/spine", "t.example.com/superspine", "t.example.com/zone"]
# 16 nodes per leaf, 8 leaves per spine, 4 spines per superspine, 2 superspines per zone, 2 zones: 2,048 nodes.
FABRIC = {
    "nodes": "gpu-{index:04}",
    "count": 2,
    "tiers": [
        {"name": "leaf-{index:03}", "size": 16},
        {"name": "spine-{index:02}", "size": 8},
        {"name": "ss-{index}", "size": 4},
        {"name": "zone-{index}", "size": 2},
    ],
}


def _explicit() -> dict[str, Any]:
    """The same tree written out, node by node, as a stack without `fabric` states it."""
    leaf = spine = ss = node = 1
    zones: dict[str, Any] = {}
    for zone in range(1, 3):
        supers: dict[str, Any] = {}
        for _ in range(2):
            spines: dict[str, Any] = {}
            for _ in range(4):
                leaves: dict[str, Any] = {}
                for _ in range(8):
                    leaves[f"leaf-{leaf:03}"] = {"nodes": [f"gpu-{n:04}" for n in range(node, node + 16)]}
                    leaf, node = leaf + 1, node + 16
                spines[f"spine-{spine:02}"] = {"domains": leaves}
                spine += 1
            supers[f"ss-{ss}"] = {"domains": spines}
            ss += 1
        zones[f"zone-{zone}"] = {"domains": supers}
    return zones


def _stack(topology: dict[str, Any]) -> dict[str, Any]:
    def change(raw: dict[str, Any]) -> None:
        raw["cluster"]["gpusPerNode"] = 8
        raw["topology"] = {"tiers": TIERS, "hyperNodes": "explicit", **topology}

    return mutate(DEV, change)


def _topology_objects(result: Any) -> dict[str, Any]:
    return {o.file: o.manifest for o in result.rendered.objects if o.kind in ("HyperNode", "Node")}


def test_a_four_tier_fabric_renders_exactly_its_explicit_form(render_raw: Any) -> None:
    lines = sum(1 + len(tier) for tier in FABRIC["tiers"]) + 3  # type: ignore[arg-type]
    assert lines < 20, "the compact form is a few lines"
    compact = _topology_objects(render_raw(_stack({"fabric": FABRIC})))
    explicit = _topology_objects(render_raw(_stack({"domains": _explicit()})))
    assert compact == explicit
    assert sum(1 for f in compact if f.startswith("manifests/NodePatch.")) == 2048
    assert sum(1 for f in compact if f.startswith("manifests/HyperNode.")) == 2 + 4 + 16 + 128


def test_irregular_parts_merge_in_by_name() -> None:
    irregular = {
        "fabric": {**FABRIC, "omit": ["leaf-128"]},
        "domains": {
            "zone-1": {
                "domains": {
                    "ss-1": {
                        "domains": {
                            "spine-01": {
                                "domains": {
                                    # a short leaf, and nodes with fewer GPUs
                                    "leaf-001": {"nodes": ["gpu-[0001-0012]", {"names": "gpu-[0013-0014]", "gpus": 4}]},
                                    "leaf-999": {"nodes": ["extra-1"]},  # an extra leaf
                                }
                            }
                        }
                    }
                }
            }
        },
    }
    topology = load(_stack(irregular)).topology
    assert topology is not None
    assert topology.domains["leaf-001"].nodes == tuple(f"gpu-{n:04}" for n in range(1, 15))
    assert topology.node_gpus["gpu-0013"] == 4 and topology.node_gpus["gpu-0001"] == 8
    assert topology.domains["leaf-999"].parent == "spine-01"
    assert "leaf-128" not in topology.domains and "gpu-2048" not in topology.node_leaf
    assert len(topology.node_leaf) == 2048 - 16 - 2 + 1


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda f: f["tiers"].pop(), "topology"),
        (lambda f: f.update(nodes="gpu"), "topology.fabric.nodes"),
        (lambda f: f.update(nodes="gpu-{index}-{index}"), "topology.fabric.nodes"),
        (lambda f: f["tiers"][0].update(name="Leaf_{index}"), "topology.fabric.tiers[0].name"),
        (lambda f: f["tiers"][1].update(size=0), "topology.fabric.tiers[1].size"),
        (lambda f: f.update(nodes="gpu-{index:02}"), "topology"),  # 2,048 does not fit two digits
    ],
)
def test_a_fabric_that_cannot_stand_for_a_tree_names_its_key(change: Any, path: str) -> None:
    fabric: dict[str, Any] = {**FABRIC, "tiers": [dict(t) for t in FABRIC["tiers"]]}  # type: ignore[union-attr]
    change(fabric)
    assert path in paths_of(_stack({"fabric": fabric}))


@pytest.mark.parametrize(
    ("where", "topology"),
    [
        ("a fabric", {"fabric": {**FABRIC, "tiers": [{**t, "size": 4096} for t in FABRIC["tiers"]]}}),
        ("a range", {"domains": {"leaf-a": {"nodes": ["gpu-[1-999999999999]"]}}, "tiers": TIERS[:1]}),
        (
            "ranges",
            {
                "domains": {"leaf-a": {"nodes": ["a-[1-90000]"]}, "leaf-b": {"nodes": ["b-[1-90000]"]}},
                "tiers": TIERS[:1],
            },
        ),
    ],
)
def test_a_topology_past_its_bound_is_refused_before_it_is_expanded(where: str, topology: dict[str, Any]) -> None:
    """A typo that multiplies a topology costs neither memory nor time: it is counted, not built."""
    import time
    import tracemalloc

    tracemalloc.start()
    started = time.monotonic()
    problems = problems_of(_stack(topology))
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [p.path for p in problems] in (["topology"], ["topology.domains"], ["topology.domains.leaf-a.nodes[0]"])
    assert "more than" in problems[0].message and "100000" in problems[0].message
    assert peak < 50 * 2**20 and elapsed < 5, (where, peak, elapsed)
