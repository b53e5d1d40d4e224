"""The HyperNodes label discovery builds, as Volcano v1.15.1's controller builds them
(pkg/controllers/hypernode/discovery/label/label.go, `generateHyperNodeInfo`): a node's tier
labels are walked from tier 1 up and the walk stops at the first label the node lacks."""

from __future__ import annotations

from whatif.discovery import discover

TIERS = ("example.com/leaf", "example.com/spine", "example.com/zone")


def test_a_node_is_kept_in_the_tiers_it_has_labels_for() -> None:
    found = discover(
        [
            ("full", {TIERS[0]: "l1", TIERS[1]: "s1", TIERS[2]: "z1"}),
            ("no-zone", {TIERS[0]: "l2", TIERS[1]: "s1"}),
            ("no-spine", {TIERS[0]: "l3", TIERS[2]: "z1"}),
            ("no-leaf", {TIERS[1]: "s1", TIERS[2]: "z1"}),
        ],
        TIERS,
    )
    assert found["tier1-l2"].children == ["no-zone"] and found["tier1-l2"].parent == "tier2-s1"
    assert found["tier2-s1"].nodes == {"full", "no-zone"}
    # The walk stops at the missing spine: the leaf exists, with no parent, and the zone never sees it.
    assert found["tier1-l3"].children == ["no-spine"] and found["tier1-l3"].parent is None
    assert found["tier3-z1"].nodes == {"full"}
    # Without the tier-1 label a node is in no HyperNode at all.
    assert not [d for d in found.values() if "no-leaf" in d.nodes]


def test_an_empty_label_value_counts_as_present() -> None:
    found = discover([("blank", {TIERS[0]: ""})], TIERS[:1])
    assert [d.nodes for d in found.values()] == [{"blank"}]
