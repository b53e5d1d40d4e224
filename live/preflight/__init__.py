"""Preflight: what a stack would meet on a real cluster, found before the first `pulumi up`.

Compares a stack's render with a `ClusterState` (read-only): configured nodes that do not exist
(a node patch would create a bare Node), accelerator counts and resource names the nodes do not
offer, labels the patches would change, taints that keep a model off every node, objects that
exist already without the stack managing them (`pulumi up` would fail with AlreadyExists, or an
adoption whose fields do not match), the Volcano and LWS installs, and queues or PodGroups that
are full or stuck now, and HyperNodes Volcano's scheduler cannot build a topology from. Every
finding says what to do.
"""

from __future__ import annotations

from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.autoscalers import check_autoscalers
from live.preflight.capacity import check_capacity
from live.preflight.claims import check_claim_access_modes, check_claims
from live.preflight.drift import check_drift
from live.preflight.gateway import check_gateway
from live.preflight.hypernodes import check_hypernode_parents
from live.preflight.installs import check_installs, check_prerequisites
from live.preflight.interconnects import check_interconnects
from live.preflight.nodes import check_nodes, check_taints, tolerates
from live.preflight.objects import check_existing_objects
from live.preflight.pools import check_pools
from live.preflight.queue_order import check_queue_order
from live.preflight.report import Finding, Report, as_json, markdown
from offline.manifests import Rendered

__all__ = ["Finding", "Report", "as_json", "markdown", "preflight", "tolerates"]


def preflight(spec: PlatformSpec, rendered: Rendered, state: ClusterState) -> Report:
    report = Report(spec.stack, state.source)
    check_nodes(spec, state, report)
    check_pools(spec, state, report)
    check_interconnects(spec, state, report)
    check_autoscalers(spec, state, report)
    check_taints(spec, state, report)
    check_claims(spec, state, report)
    check_claim_access_modes(spec, state, report)
    check_existing_objects(spec, rendered, state, report)
    check_drift(spec, rendered, state, report)
    check_installs(spec, rendered, state, report)
    check_prerequisites(spec, rendered, state, report)
    check_capacity(spec, state, report)
    check_queue_order(rendered, state, report)
    check_hypernode_parents(state, report)
    check_gateway(spec, state, report)
    return report
