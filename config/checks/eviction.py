"""Checks of how the scheduler evicts: one pair of eviction actions, where the plugins that choose
victims sit, the switches that decide which jobs may preempt and reclaim, and the PriorityClass set
that orders them (one global default, an order the names do not contradict).

Every rule here follows from how Volcano v1.15.1 walks its tiers for victims
(`Session.Preemptable`, `Session.Reclaimable` and `Session.UnifiedEvictable` in
pkg/scheduler/framework/session_plugins.go): within a tier the plugins' answers are intersected, and
the first tier that yields any victim decides; a tier that yields none hands the whole candidate
list to the next one."""

from __future__ import annotations

import re
from typing import Any

from config.errors import Problem, join_path
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import plugin_names, scheduler_actions, scheduler_conf
from config.upstream.volcano import (
    EVICTION_ACTIONS,
    FLOOR_GANG_EVICTION,
    GANG_EVICTION_ACTIONS,
    GANG_EVICTION_QUEUE_PLUGINS,
    LEGACY_EVICTION_ACTIONS,
    QUEUE_PLUGINS,
    REGISTERED_ACTIONS,
    VICTIM_PLUGINS,
)

BASE = "volcano.scheduler"


def check_eviction(spec: PlatformSpec) -> list[Problem]:
    return [*_action_pairs(spec), *_victim_tiers(spec), *_gang_queue_plugin(spec)]


def _tier_of(tiers: list[list[dict[str, Any]]], name: str) -> int | None:
    return next((index for index, tier in enumerate(tiers) if any(e["name"] == name for e in tier)), None)


def _entry_of(tiers: list[list[dict[str, Any]]], name: str) -> dict[str, Any] | None:
    return next((e for tier in tiers for e in tier if e["name"] == name), None)


def _switched_on(entry: dict[str, Any], switches: tuple[str, ...]) -> bool:
    """Whether a victim-choosing function of the plugin takes part (every switch defaults to on,
    pkg/scheduler/plugins/defaults.go `ApplyPluginConfDefaults`)."""
    return any(entry.get(switch, True) for switch in switches)


def _victim_tiers(spec: PlatformSpec) -> list[Problem]:
    """With any eviction action, the queue plugin must share gang's tier, and no plugin in a later
    tier may choose victims: it would decide on the full candidate list whenever the first tier
    offers none, ignoring priority, gangs and quotas alike."""
    volcano = spec.config.volcano
    actions = scheduler_actions(volcano, spec.plans_multi_node_models)
    evicting = [a for a in actions if a in EVICTION_ACTIONS]
    if not evicting:
        return []
    conf = scheduler_conf(volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups)
    tiers = [tier["plugins"] for tier in conf["tiers"]]
    plugins = volcano.scheduler.plugins
    problems: list[Problem] = []
    gang_tier = _tier_of(tiers, "gang")
    queue_plugin = next((p for p in QUEUE_PLUGINS if _tier_of(tiers, p) is not None), None)
    queue_tier = _tier_of(tiers, queue_plugin) if queue_plugin else None
    if gang_tier is not None and queue_plugin is not None and queue_tier != gang_tier:
        moved = queue_plugin if plugins.get(queue_plugin) and plugins[queue_plugin].tier is not None else "gang"
        problems.append(
            Problem(
                join_path(BASE, "plugins", moved, "tier"),
                f"`{queue_plugin}` is in tier {(queue_tier or 0) + 1} and `gang` in tier {gang_tier + 1}: with "
                f"{', '.join(evicting)} the scheduler takes victims from the first tier that yields any, so "
                f"`{queue_plugin}` is never asked and reclaim takes resources from queues below their deserved share "
                "and guarantee (upstream's own gang-eviction policy keeps the queue plugin in gang's tier)",
                f"put `{queue_plugin}` in gang's tier: remove the `tier` override",
                got=(queue_tier or 0) + 1 if moved == queue_plugin else gang_tier + 1,
            )
        )
    first = min((i for i in (gang_tier, queue_tier) if i is not None), default=0)
    for index, tier in enumerate(tiers):
        if index <= first:
            continue
        for entry in tier:
            switches = VICTIM_PLUGINS.get(entry["name"])
            if switches and _switched_on(entry, switches):
                problems.append(
                    Problem(
                        join_path(BASE, "plugins", entry["name"]),
                        f"`{entry['name']}` chooses eviction victims from tier {index + 1}: whenever tier {first + 1} "
                        "offers none (no gang has pods to spare, or every queue is within its share) it decides "
                        "alone on every candidate, ignoring priority, gangs and quotas",
                        f"turn its victim switches off ({', '.join(f'`{s}: false`' for s in switches)}) or move it to "
                        f"tier {first + 1}",
                        severity="warning",
                    )
                )
    gang = _entry_of(tiers, "gang")
    if gang is not None and gang.get("enableJobStarving", True):
        problems.append(
            Problem(
                join_path(BASE, "plugins", "gang", "flags", "enableJobStarving"),
                "with gang's own starving test a PodGroup preempts and reclaims only while fewer pods run than its "
                "minMember (one LWS group, one pod of a Deployment): once a model's first replica runs, its other "
                "replicas wait for free capacity whatever their priority",
                "remove the override (the platform turns it off, so priority's test decides)",
                got=True,
                severity="warning",
            )
        )
    return problems


def _gang_queue_plugin(spec: PlatformSpec) -> list[Problem]:
    """Gang-aware reclaim consults only capacity about queue shares (`AddUnifiedEvictableFn` is
    registered by gang, priority, conformance and capacity only)."""
    volcano = spec.config.volcano
    actions = scheduler_actions(volcano, spec.plans_multi_node_models)
    queue_plugin = volcano.scheduler.queue_plugin
    if "gangreclaim" not in actions or queue_plugin in GANG_EVICTION_QUEUE_PLUGINS:
        return []
    where = "eviction" if volcano.scheduler.actions is None else "actions"
    return [
        Problem(
            join_path(BASE, where),
            f"gangreclaim never asks `{queue_plugin}` about queue shares (only capacity filters gang-aware reclaim "
            "victims), so it would take resources from queues below their deserved share and guarantee",
            "use `queuePlugin: capacity`, or `eviction: pod`",
            got=volcano.scheduler.eviction if where == "eviction" else ", ".join(actions),
        )
    ]


def _action_pairs(spec: PlatformSpec) -> list[Problem]:
    """Gang-aware and legacy eviction are two separate action pairs; never both, and gang-aware
    only where the scheduler has it."""
    volcano = spec.config.volcano
    scheduler = volcano.scheduler
    actions = scheduler_actions(volcano, spec.plans_multi_node_models)
    gang = [a for a in actions if a in GANG_EVICTION_ACTIONS]
    legacy = [a for a in actions if a in LEGACY_EVICTION_ACTIONS]
    problems: list[Problem] = []
    if gang and legacy:
        problems.append(
            Problem(
                join_path(BASE, "actions"),
                f"{', '.join(gang)} and {', '.join(legacy)} both evict: the gang-aware and the legacy actions must "
                "not run in one scheduler cycle",
                "keep one pair: set `eviction: gang` or `eviction: pod` and drop `actions`",
                got=", ".join(actions),
            )
        )
    if gang and volcano.version_tuple < FLOOR_GANG_EVICTION:
        where = "actions" if scheduler.actions is not None else "eviction"
        problems.append(
            Problem(
                join_path(BASE, where),
                f"{', '.join(gang)} need Volcano >= 1.15; an unknown action makes the scheduler reject the whole conf",
                "raise `volcano.version`, or use `eviction: pod`",
                got=volcano.version,
            )
        )
    if scheduler.actions is not None and scheduler.eviction != "auto":
        wanted = GANG_EVICTION_ACTIONS if scheduler.eviction == "gang" else LEGACY_EVICTION_ACTIONS
        if not set(actions) & set(wanted) or (gang if scheduler.eviction == "pod" else legacy):
            problems.append(
                Problem(
                    join_path(BASE, "eviction"),
                    f"`eviction: {scheduler.eviction}` contradicts `actions` ({', '.join(actions)})",
                    "set one of them: `eviction` chooses the preempt and reclaim actions of the default list",
                )
            )
    multi_node = [m.name for m in spec.models.values() if m.multi_node]
    multi_replica = [m.name for m in spec.models.values() if m.multi_node and m.config.planned_replicas > 1]
    where = join_path(BASE, "eviction" if scheduler.actions is None else "actions")
    if multi_replica and legacy:
        problems.append(
            Problem(
                where,
                f"models {', '.join(multi_replica)} run several LWS groups under one PodGroup; the legacy preempt "
                "and reclaim pick victims pod by pod and can take one pod from each of several groups, and LWS "
                "then restarts every group that lost one",
                "use `eviction: gang` (Volcano >= 1.15)",
                severity="warning",
            )
        )
    elif multi_node and legacy:
        problems.append(
            Problem(
                where,
                f"models {', '.join(multi_node)} span several nodes; the legacy preempt and reclaim pick victims pod "
                "by pod, and a group that loses one pod is restarted whole by LWS: one eviction stops the whole "
                "replica and frees only a part of it",
                "use `eviction: gang` (Volcano >= 1.15), which evicts whole groups",
                got=scheduler.eviction if scheduler.actions is None else ", ".join(actions),
                severity="warning",
            )
        )
    if gang and not multi_node:
        conf = scheduler_conf(
            volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups
        )
        if "gang" not in plugin_names(conf):
            problems.append(
                Problem(
                    where,
                    f"{', '.join(gang)} evict whole gangs by the victim functions of the `gang` plugin "
                    "(`AddUnifiedEvictableFn`, registered by gang, priority, conformance and capacity in v1.15.1), "
                    "and `gang` is off: victims are then picked without regard to any gang's minimum, which is what "
                    "gang-aware eviction exists to prevent",
                    "do not disable `gang`, or use `eviction: pod`",
                    got=scheduler.eviction if scheduler.actions is None else ", ".join(actions),
                )
            )
    placed = [m.name for m in spec.models.values() if m.own_pod_group and m.config.topology is not None]
    if placed and "preempt" in actions:
        problems.append(
            Problem(
                join_path(BASE, "eviction" if scheduler.actions is None else "actions"),
                f"models {', '.join(placed)} have a network topology constraint on their PodGroup, and the legacy "
                "`preempt` skips every such job (pkg/scheduler/actions/preempt/preempt.go, "
                "`job.ContainsNetworkTopology()`): they never preempt lower-priority work in their queue",
                "use `eviction: gang` (Volcano >= 1.15), whose gangpreempt evicts inside the model's domain",
                severity="warning",
            )
        )
    for index, configuration in enumerate(scheduler.configurations):
        if configuration.name not in REGISTERED_ACTIONS:
            problems.append(
                Problem(
                    join_path(BASE, "configurations", index, "name"),
                    f"`{configuration.name}` is not an action, so its arguments would apply to nothing",
                    "use one of: " + ", ".join(sorted(REGISTERED_ACTIONS)),
                    got=configuration.name,
                )
            )
        elif configuration.name not in actions:
            problems.append(
                Problem(
                    join_path(BASE, "configurations", index, "name"),
                    f"action `{configuration.name}` does not run (actions: {', '.join(actions)}), so its arguments "
                    "are never read",
                    "add the action, or remove its configuration",
                    got=configuration.name,
                    severity="warning",
                )
            )
    return problems


# Words in class names that promise a place in the order, from the top.
_RANK_WORDS = ("critical", "high", "normal", "medium", "low", "best-effort", "besteffort")
_P_NUMBER = re.compile(r"^p(\d+)\b")


def check_priority_classes(spec: PlatformSpec) -> list[Problem]:
    classes = spec.priority_classes
    defaults = [name for name, pc in classes.items() if pc.global_default]
    problems = [
        Problem(
            join_path("priorityClasses", name, "globalDefault"),
            f"{len(defaults)} classes are the global default ({', '.join(defaults)})",
            "mark at most one class `globalDefault: true`",
            got=True,
        )
        for name in defaults[1:]
    ]
    if defaults:
        name = defaults[0]
        chosen = classes[name]
        lower = [other for other, pc in classes.items() if pc.value < chosen.value]
        if lower and chosen.preemption_policy == "PreemptLowerPriority":
            problems.append(
                Problem(
                    join_path("priorityClasses", name, "globalDefault"),
                    f"every pod that names no class gets `{name}` ({chosen.value}), which preempts "
                    f"{', '.join(lower)}: any stray pod can evict work of those classes",
                    "make the lowest class the global default, or give this one `preemptionPolicy: Never`",
                    got=True,
                    severity="warning",
                )
            )
    problems += _names_contradict_values(spec)
    return problems


def _rank(name: str) -> tuple[int, int] | None:
    """(kind, position) a name promises: `p0` before `p1`; `critical` before `low`."""
    match = _P_NUMBER.match(name)
    if match:
        return (0, int(match.group(1)))
    for position, word in enumerate(_RANK_WORDS):
        if word in name:
            return (1, position)
    return None


def _names_contradict_values(spec: PlatformSpec) -> list[Problem]:
    ranked = [(name, rank, pc.value) for name, pc in spec.priority_classes.items() if (rank := _rank(name))]
    problems: list[Problem] = []
    for name, rank, value in ranked:
        for other, other_rank, other_value in ranked:
            if rank[0] == other_rank[0] and rank[1] > other_rank[1] and value > other_value:
                problems.append(
                    Problem(
                        join_path("priorityClasses", name, "value"),
                        f"`{name}` ({value}) ranks above `{other}` ({other_value}), which its name says it is below",
                        "swap the values, or rename the classes",
                        got=value,
                        severity="warning",
                    )
                )
    return problems
