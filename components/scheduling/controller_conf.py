"""The Volcano controller's network-topology discovery config, from the topology model.

With `hyperNodes: discovery` the controller builds HyperNodes from the node labels the platform
sets; the label list runs from the top tier down to the hostname (the node level), which is the
order the controller expects.
"""

from __future__ import annotations

from typing import Any

from config.sections.topology import TopologyConfig
from config.upstream.volcano import HOSTNAME_LABEL


def controller_conf(topology: TopologyConfig | None) -> dict[str, Any]:
    """`volcano-controller.conf` as a mapping; empty when the controller discovers nothing."""
    if topology is None or topology.hyper_nodes != "discovery":
        return {}
    labels = [{"nodeLabel": label} for label in reversed(topology.tiers)]
    labels.append({"nodeLabel": HOSTNAME_LABEL})
    return {
        "networkTopologyDiscovery": [
            {
                "source": "label",
                "enabled": True,
                "interval": topology.discovery.interval,
                "config": {"networkTopologyTypes": {topology.discovery.type_name: labels}},
            }
        ]
    }
