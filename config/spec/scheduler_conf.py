"""The scheduler policy (`volcano-scheduler.conf`) as plain data, from the typed config.

A GPU platform's default: gang scheduling that never preempts partial gangs, priority and
preemption, reclaim between queues, one queue plugin, GPU binpacking against fragmentation and
network-topology-aware placement. Stack config tunes weights, adds or removes plugins and
overrides actions; the result is checked by `config.checks.scheduler` and rendered by the Volcano
component.
"""

from __future__ import annotations

from typing import Any

from config.sections.volcano import PluginSettings, VolcanoConfig
from config.upstream.volcano import (
    FLOOR_GANG_EVICTION,
    FLOOR_TIER_NAMES,
    GANG_EVICTION_ACTIONS,
    GANG_EVICTION_QUEUE_PLUGINS,
    NODEGROUP_PLUGIN,
    PLUGIN_FLAGS,
    TOPOLOGY_PLUGIN,
)

PluginEntry = dict[str, Any]


def _entry(name: str, flags: dict[str, bool] | None = None, arguments: dict[str, Any] | None = None) -> PluginEntry:
    entry: PluginEntry = {"name": name}
    for flag in PLUGIN_FLAGS:  # stable, upstream order
        if flags and flag in flags:
            entry[flag] = flags[flag]
    if arguments:
        entry["arguments"] = dict(arguments)
    return entry


def default_tiers(
    volcano: VolcanoConfig, gpu_resource: str, hierarchy: bool, node_groups: bool = False
) -> list[list[PluginEntry]]:
    """The generated policy before the stack's overrides.

    Tier 1 holds every plugin that chooses eviction victims: the scheduler takes the victims of the
    first tier that yields any (`Session.Preemptable`, `Reclaimable` and `UnifiedEvictable` in
    pkg/scheduler/framework/session_plugins.go), so a queue plugin in a later tier would never be
    asked and reclaim would take GPUs from queues below their deserved share or guarantee (upstream's
    gang-eviction e2e policy puts `capacity` in tier 1 for this reason: test/e2e/gangevict/gangevict.go).
    gang's own starving test is off: it counts a PodGroup as starving only while fewer pods run than
    its minMember (one LWS group, or one pod of a Deployment), so once a model's first replica ran
    its other replicas would never preempt or reclaim; priority's test (some pod of the job does not
    run yet) then decides, and the gang-aware actions free room for one more group at a time for a
    job that already runs (`collectPendingTasksForRunningJob`, pkg/scheduler/actions/utils/simulate.go).
    """
    scheduler = volcano.scheduler
    queue_flags = {"enableHierarchy": True} if scheduler.queue_plugin == "capacity" and hierarchy else {}
    first: list[PluginEntry] = [
        _entry("priority"),
        _entry("gang", {"enablePreemptable": False, "enableJobStarving": False}),
        _entry("conformance"),
        _entry(scheduler.queue_plugin, queue_flags),
    ]
    spread_arguments = {"podtopologyspread.weight": scheduler.spread_weight} if scheduler.spread_weight != 2 else {}
    second: list[PluginEntry] = [
        _entry("drf", {"enablePreemptable": False}),
        _entry("predicates"),
        # Kubernetes' pod topology spread score (a model's preferred `spread`), at the stack's weight
        # where it is not Volcano's 2.
        _entry("nodeorder", arguments=spread_arguments),
    ]
    if node_groups:
        # Quotas per accelerator type: each queue's tasks stay on its node groups. Not strict, so
        # nodes outside every group (system nodes) still take tasks of queues without an affinity.
        second.append(_entry(NODEGROUP_PLUGIN, arguments={"strict": False}))
    binpack = scheduler.binpack
    if binpack.enabled:
        resources = {gpu_resource: binpack.gpu, **binpack.resources}
        arguments: dict[str, Any] = {
            "binpack.weight": binpack.weight,
            "binpack.cpu": binpack.cpu,
            "binpack.memory": binpack.memory,
            "binpack.resources": ",".join(resources),
        }
        arguments.update({f"binpack.resources.{name}": weight for name, weight in resources.items()})
        second.append(_entry("binpack", arguments=arguments))
    topology = scheduler.network_topology
    if topology.enabled:
        arguments = {"weight": topology.weight}
        if volcano.version_tuple >= FLOOR_TIER_NAMES:
            arguments.update(
                {
                    "hypernode.binpack.cpu": topology.cpu,
                    "hypernode.binpack.memory": topology.memory,
                    "hypernode.binpack.resources": gpu_resource,
                    f"hypernode.binpack.resources.{gpu_resource}": topology.gpu,
                }
            )
        second.append(_entry(TOPOLOGY_PLUGIN, arguments=arguments))
    return [first, second]


def _apply(tiers: list[list[PluginEntry]], name: str, settings: PluginSettings) -> None:
    """Merge an override into the plugin's entry; remove it, move it to `tier`, or add it."""
    flags, arguments, where = dict(settings.flags), dict(settings.arguments), None
    for tier_index, tier in enumerate(tiers):
        for index, entry in enumerate(tier):
            if entry["name"] == name:
                flags = {f: entry[f] for f in PLUGIN_FLAGS if f in entry} | flags
                arguments = dict(entry.get("arguments", {})) | arguments
                where = (tier_index, index)
    if where is not None:
        del tiers[where[0]][where[1]]
    if not settings.enabled:
        return
    target = settings.tier - 1 if settings.tier is not None else (where[0] if where else None)
    if target is None:  # a new plugin without a tier; reported by the scheduler rules
        return
    while len(tiers) <= target:
        tiers.append([])
    entry = _entry(name, flags, arguments)
    if where is not None and target == where[0]:
        tiers[target].insert(where[1], entry)
    else:
        tiers[target].append(entry)


def eviction_style(volcano: VolcanoConfig, multi_node_models: bool) -> str:
    """`gang` or `pod`. With multi-node models, pod-by-pod eviction can take one pod from each of
    several LWS groups, and LWS then restarts every one of those groups; gang eviction takes whole
    groups. Without them every job is a single pod, and the legacy actions are the proven path.
    Gang eviction needs `capacity`: it is the only queue plugin whose functions filter gang-aware
    reclaim victims by deserved share and guarantee (`GANG_EVICTION_QUEUE_PLUGINS`)."""
    chosen = volcano.scheduler.eviction
    if chosen != "auto":
        return chosen
    gang_ready = (
        volcano.version_tuple >= FLOOR_GANG_EVICTION and volcano.scheduler.queue_plugin in GANG_EVICTION_QUEUE_PLUGINS
    )
    return "gang" if multi_node_models and gang_ready else "pod"


def scheduler_actions(volcano: VolcanoConfig, multi_node_models: bool) -> tuple[str, ...]:
    if volcano.scheduler.actions is not None:
        return volcano.scheduler.actions
    preempt, reclaim = (
        GANG_EVICTION_ACTIONS if eviction_style(volcano, multi_node_models) == "gang" else ("preempt", "reclaim")
    )
    return ("enqueue", "allocate", preempt, reclaim, "backfill")


def scheduler_conf(
    volcano: VolcanoConfig,
    gpu_resource: str,
    hierarchy: bool,
    multi_node_models: bool = False,
    node_groups: bool = False,
) -> dict[str, Any]:
    """The conf mapping: `actions` (one comma-separated string), `tiers`, `configurations`."""
    tiers = default_tiers(volcano, gpu_resource, hierarchy, node_groups)
    for name, settings in volcano.scheduler.plugins.items():
        _apply(tiers, name, settings)
    conf: dict[str, Any] = {
        "actions": ", ".join(scheduler_actions(volcano, multi_node_models)),
        "tiers": [{"plugins": tier} for tier in tiers if tier],
    }
    if volcano.scheduler.configurations:
        conf["configurations"] = [
            {"name": c.name, "arguments": dict(c.arguments)} if c.arguments else {"name": c.name}
            for c in volcano.scheduler.configurations
        ]
    return conf


def plugin_names(conf: dict[str, Any]) -> list[str]:
    return [entry["name"] for tier in conf["tiers"] for entry in tier["plugins"]]
