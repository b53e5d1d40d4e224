"""Checks of the scheduler policy and the Volcano version against what the stack uses."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from decimal import Decimal

from config.errors import Problem, join_path
from config.schema.quantity import format_amount, quantity_value
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import default_tiers, plugin_names, scheduler_conf
from config.upstream.volcano import (
    BOOLEAN_PLUGIN_ARGUMENTS,
    FLOOR_DEQUEUE_STRATEGY,
    FLOOR_NETWORK_TOPOLOGY,
    FLOOR_TIER_NAMES,
    INTEGER_PLUGIN_ARGUMENTS,
    NODEGROUP_PLUGIN,
    PLUGIN_FLAGS,
    QUEUE_PLUGINS,
    REGISTERED_PLUGINS,
    REMOVED_PLUGIN_FLAGS,
    TOPOLOGY_PLUGIN,
)

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
BASE = "volcano.scheduler"


def check_scheduler(spec: PlatformSpec) -> list[Problem]:
    volcano = spec.config.volcano
    scheduler = volcano.scheduler
    problems: list[Problem] = []
    defaults = {entry["name"] for tier in default_tiers(volcano, spec.gpu_resource, spec.hierarchy) for entry in tier}
    for name, settings in scheduler.plugins.items():
        path = join_path(BASE, "plugins", name)
        if name not in REGISTERED_PLUGINS:
            problems.append(
                Problem(
                    path,
                    f"`{name}` is not a registered scheduler plugin (it would be skipped)",
                    "use one of: " + ", ".join(sorted(REGISTERED_PLUGINS)),
                )
            )
            continue
        if name not in defaults and settings.enabled and settings.tier is None:
            problems.append(
                Problem(path, f"`{name}` is not in the default policy, so it needs a tier", "add `tier: 2` (or 1)")
            )
        problems += _argument_types(name, settings.arguments, join_path(path, "arguments"))
        problems += _flag_names(settings.flags, join_path(path, "flags"))

    if scheduler.actions is not None and "enqueue" not in scheduler.actions:
        problems.append(
            Problem(
                join_path(BASE, "actions"),
                'without `enqueue` the scheduler moves every PodGroup straight to Inqueue (allocate.go: "no enqueue '
                "action is configured\"), so no gang is checked against its queue's capability before its pods "
                "are placed: partial gangs hold GPUs while they wait, and queues admit more than they may hold",
                "put `enqueue` first (`enqueue, allocate, ...`), or remove `actions` to get the default list",
                got=", ".join(scheduler.actions),
            )
        )
    conf = scheduler_conf(volcano, spec.gpu_resource, spec.hierarchy, spec.plans_multi_node_models, spec.node_groups)
    active = plugin_names(conf)
    queue_plugins = [p for p in QUEUE_PLUGINS if p in active]
    if len(queue_plugins) > 1:
        problems.append(
            Problem(
                join_path(BASE, "plugins"),
                "both `capacity` and `proportion` are enabled; they "
                "compute queue shares differently and must not run together",
                f"keep only `queuePlugin: {scheduler.queue_plugin}`",
            )
        )
    elif not queue_plugins:
        problems.append(
            Problem(
                join_path(BASE, "plugins", scheduler.queue_plugin),
                "no queue plugin is enabled, so queue capabilities and shares are not enforced",
                f"do not disable `{scheduler.queue_plugin}`",
            )
        )
    if spec.node_groups and NODEGROUP_PLUGIN not in active:
        typed = sorted(name for name, t in spec.config.tenants.items() if t.queue.by_type)
        problems.append(
            Problem(
                join_path(BASE, "plugins", NODEGROUP_PLUGIN),
                f"tenants keep quotas per accelerator type ({', '.join(typed)}), which Volcano holds only with the "
                f"`{NODEGROUP_PLUGIN}` plugin (each type's queue to its pools' node groups): without it a type's "
                "work runs on any type's nodes",
                f"do not disable `{NODEGROUP_PLUGIN}`, or keep the quotas per resource (no `queue.byType`)",
            )
        )
    has_parents = any(t.parent is not None for t in spec.tenants.values())
    if has_parents and scheduler.queue_plugin == "proportion":
        problems.append(
            Problem(
                join_path(BASE, "queuePlugin"),
                "tenant queues have parents, but `proportion` ignores queue hierarchy",
                "use `queuePlugin: capacity` (with hierarchy)",
                got=scheduler.queue_plugin,
            )
        )
    elif has_parents and not any(
        entry["name"] == "capacity" and entry.get("enableHierarchy")
        for tier in conf["tiers"]
        for entry in tier["plugins"]
    ):
        where = ("hierarchy",) if scheduler.hierarchy is False else ("plugins", "capacity", "flags")
        problems.append(
            Problem(
                join_path(BASE, *where),
                "tenant queues have parents, but the capacity plugin's `enableHierarchy` is off",
                "remove the setting that turns it off (it defaults to on with parent queues)",
            )
        )
    for tier in conf["tiers"]:
        for entry in tier["plugins"]:
            if entry["name"] == "drf" and entry.get("enableHierarchy") and "proportion" in active:
                problems.append(
                    Problem(
                        join_path(BASE, "plugins", "drf"),
                        "drf with `enableHierarchy` conflicts with the proportion plugin",
                        "drop drf's enableHierarchy, or use capacity",
                    )
                )
    if scheduler.queue_plugin == "proportion":
        for tenant in spec.tenants.values():
            if tenant.config.queue.deserved:
                problems.append(
                    Problem(
                        join_path(tenant.queue_path, "deserved"),
                        "`proportion` ignores deserved shares",
                        "use `queuePlugin: capacity`, or use weight/capability",
                        severity="warning",
                    )
                )
    problems += _topology_plugin(spec, active) + _queue_fields_of_version(spec)
    problems += _guard_plugins_off(spec) + _replaced_overcommit_factor(spec) + _unpreemptable_above_deserved(spec)
    return problems


# Plugins whose absence silently removes a protection (pkg/scheduler/plugins/<name>/, v1.15.1).
GUARD_PLUGINS: dict[str, str] = {
    "priority": "the PriorityClasses stop ordering gangs and tasks, and preempt and reclaim no longer spare pods "
    "of a higher priority than the one evicting them (priority.go: JobOrderFn, PreemptableFn), so the "
    "stack's `priorityClass` settings order nothing",
    "conformance": "preempt and reclaim may evict pods of `kube-system` and pods at `system-cluster-critical` or "
    "`system-node-critical` priority (conformance.go, evictableFn), the cluster's own DNS and device plugins "
    "among them",
    "gang": "a model's pods are no longer placed together: nothing holds a PodGroup to its minMember (gang.go: "
    "JobValidFn, JobReadyFn), so part of a multi-node replica binds and holds its GPUs while the rest waits, "
    "and eviction no longer spares the pods a gang needs",
    "predicates": "pods may be bound to nodes whose taints they do not tolerate or whose labels their node "
    "selector and affinity do not match (predicates.go: PredicateFn), which the kubelet then refuses",
}
QUEUE_PLUGIN_OFF = (
    "queues stop bounding their tenants: no capability, deserved share or guarantee is held, and reclaim has no "
    "shares to restore ({name}.go: AllocatableFn, JobEnqueueableFn, ReclaimableFn)"
)


def _guard_plugins_off(spec: PlatformSpec) -> list[Problem]:
    guarded = {**GUARD_PLUGINS}
    queue_plugin = spec.config.volcano.scheduler.queue_plugin
    guarded[queue_plugin] = QUEUE_PLUGIN_OFF.format(name=queue_plugin)
    return [
        Problem(
            join_path(BASE, "plugins", name, "enabled"),
            f"turns `{name}` off: {why}",
            f"remove `plugins.{name}.enabled: false`",
            got=False,
            severity="warning",
        )
        for name, why in guarded.items()
        if scheduler_plugin_removed(spec, name)
    ]


# overcommit.go (v1.15.1): a factor below 1 is logged and replaced by the default 1.2.
OVERCOMMIT_FACTOR_ARGUMENT, OVERCOMMIT_DEFAULT = "overcommit-factor", 1.2


def _replaced_overcommit_factor(spec: PlatformSpec) -> list[Problem]:
    settings = spec.config.volcano.scheduler.plugins.get("overcommit")
    factor = settings.arguments.get(OVERCOMMIT_FACTOR_ARGUMENT) if settings else None
    if factor is None or isinstance(factor, bool) or not _NUMBER.match(str(factor)) or float(factor) >= 1:
        return []
    return [
        Problem(
            join_path(BASE, "plugins", "overcommit", "arguments", OVERCOMMIT_FACTOR_ARGUMENT),
            f"Volcano replaces a factor below 1 by its default {OVERCOMMIT_DEFAULT} (overcommit.go), so enqueue "
            f"admits gangs for {OVERCOMMIT_DEFAULT:.0%} of the cluster instead of the {float(factor):.0%} meant",
            "use 1.0 to admit no more than the cluster holds (queue capabilities limit each tenant below it)",
            got=factor,
            severity="warning",
        )
    ]


def _unpreemptable_above_deserved(spec: PlatformSpec) -> list[Problem]:
    """Reclaim takes back only preemptable tasks (reclaim.go, gangreclaim.go: `!Preemptable`
    skips a task), so a queue whose unpreemptable models hold more than its deserved share keeps
    the excess for good, and other queues can never be brought up to theirs."""
    problems: list[Problem] = []
    held: dict[str, Decimal] = {}
    for model in spec.models.values():
        if model.config.preemptable:
            continue
        tenant = spec.tenants[model.queue_tenant]
        deserved = tenant.config.queue.deserved.get(spec.gpu_resource)
        gpus = model.peak_requests().get(spec.gpu_resource, Decimal(0))
        held[tenant.name] = held.get(tenant.name, Decimal(0)) + gpus
        if deserved is None or held[tenant.name] <= quantity_value(str(deserved)):
            continue
        problems.append(
            Problem(
                join_path("models", model.name, "preemptable"),
                f"unpreemptable models of queue `{tenant.queue_name}` hold {format_amount(held[tenant.name])} "
                f"{spec.gpu_resource}, more than its deserved {deserved}: reclaim never takes unpreemptable pods, so "
                "the queue keeps the excess and other queues cannot be brought up to their deserved shares",
                f"make the model preemptable, or raise `{join_path(tenant.queue_path, 'deserved', spec.gpu_resource)}` "
                "to what its unpreemptable models hold",
                got=False,
                severity="warning",
            )
        )
    return problems


def _flag_names(flags: Mapping[str, bool], path: str) -> list[Problem]:
    """Switch names the scheduler knows: its lenient YAML decoder ignores any other key silently."""
    problems: list[Problem] = []
    for flag in flags:
        if flag in REMOVED_PLUGIN_FLAGS:
            problems.append(
                Problem(join_path(path, flag), f"`{flag}` {REMOVED_PLUGIN_FLAGS[flag]}", f"remove `{flag}`")
            )
        elif flag not in PLUGIN_FLAGS:
            close = difflib.get_close_matches(flag, PLUGIN_FLAGS, n=1)
            problems.append(
                Problem(
                    join_path(path, flag),
                    f"`{flag}` is not a switch of Volcano's plugin options, so the scheduler would ignore it",
                    f"did you mean `{close[0]}`?" if close else "use one of: " + ", ".join(PLUGIN_FLAGS),
                )
            )
    return problems


def _argument_types(plugin: str, arguments: Mapping[str, object], path: str) -> list[Problem]:
    problems: list[Problem] = []
    integer_keys = INTEGER_PLUGIN_ARGUMENTS.get(plugin, ())
    boolean_keys = BOOLEAN_PLUGIN_ARGUMENTS.get(plugin, ())
    for key, value in arguments.items():
        arg_path = join_path(path, key)
        wants_int = any(key == k or (k.endswith(".") and key.startswith(k)) for k in integer_keys)
        if wants_int and (isinstance(value, bool) or not isinstance(value, int)):
            problems.append(
                Problem(
                    arg_path,
                    "the scheduler reads this argument as an integer",
                    "write a whole number without quotes",
                    got=value,
                )
            )
        elif key in boolean_keys and not isinstance(value, bool):
            problems.append(
                Problem(
                    arg_path,
                    "the scheduler reads this argument as a boolean",
                    "write true or false without quotes",
                    got=value,
                )
            )
        elif isinstance(value, str) and _NUMBER.match(value.strip()):
            problems.append(
                Problem(
                    arg_path,
                    "a quoted number is ignored by the scheduler",
                    "write the number without quotes (`pulumi config set --path` writes a decimal as a "
                    f"string unless given `--type float`: `pulumi config set --path --type float '{arg_path}' <n>`)",
                    got=value,
                )
            )
    return problems


def _queue_fields_of_version(spec: PlatformSpec) -> list[Problem]:
    """Queue settings the pinned Volcano's Queue CRD lacks (the manifest leaves them out)."""
    if spec.config.volcano.version_tuple >= FLOOR_DEQUEUE_STRATEGY:
        return []
    return [
        Problem(
            join_path(tenant.queue_path, "dequeueStrategy"),
            f"Volcano {spec.config.volcano.version}'s Queue has no `dequeueStrategy` (it arrived in 1.14), so the "
            "setting would be dropped",
            "remove it until `volcano.version` is 1.14 or later",
            got=tenant.config.queue.dequeue_strategy,
        )
        for tenant in spec.tenants.values()
        if "dequeue_strategy" in tenant.config.queue.model_fields_set
    ]


def _topology_plugin(spec: PlatformSpec, active: list[str]) -> list[Problem]:
    problems: list[Problem] = []
    version = spec.config.volcano.version_tuple
    constrained = [m.name for m in spec.models.values() if m.multi_node and m.config.topology]
    uses_topology = spec.topology is not None and spec.topology.hyper_nodes != "none"
    if (constrained or uses_topology) and version < FLOOR_NETWORK_TOPOLOGY:
        problems.append(
            Problem(
                "volcano.version",
                "network topologies (HyperNodes, PodGroup networkTopology) need Volcano >= 1.12",
                "raise `volcano.version`, or remove the topology",
                got=spec.config.volcano.version,
            )
        )
    own_groups = [m.name for m in spec.models.values() if m.own_pod_group]
    if own_groups and version < FLOOR_TIER_NAMES:
        problems.append(
            Problem(
                "volcano.version",
                f"multi-node models ({', '.join(own_groups)}) are gang-scheduled "
                "per LWS group with PodGroup subGroupPolicy, which needs Volcano >= 1.14",
                "raise `volcano.version` to 1.14 or later, or turn on `lws.gangScheduling` "
                "(no topology constraints then)",
                got=spec.config.volcano.version,
            )
        )
    for model in spec.models.values():
        constraint = model.config.topology
        if constraint and constraint.highest_tier_name and version < FLOOR_TIER_NAMES:
            problems.append(
                Problem(
                    join_path("models", model.name, "topology", "highestTierName"),
                    "highestTierName needs Volcano >= 1.14",
                    "use `highestTier` (a number)",
                )
            )
    if constrained and TOPOLOGY_PLUGIN not in active:
        hard = [
            m.name
            for m in spec.models.values()
            if m.multi_node and m.config.topology and m.config.topology.mode == "hard"
        ]
        where = "networkTopology.enabled" if not scheduler_plugin_removed(spec, TOPOLOGY_PLUGIN) else "plugins"
        problems.append(
            Problem(
                join_path(BASE, *where.split(".")),
                f"models {', '.join(hard or constrained)} have "
                + ("hard " if hard else "")
                + f"topology constraints but the `{TOPOLOGY_PLUGIN}` plugin is off, so "
                + ("their tiers are not enforced" if hard else "placement ignores the network"),
                "enable the plugin",
                severity="error" if hard else "warning",
            )
        )
    gang_models = [m.name for m in spec.models.values() if m.multi_node]
    if gang_models and "gang" not in active:
        problems.append(
            Problem(
                join_path(BASE, "plugins", "gang"),
                f"multi-node models ({', '.join(gang_models)}) need the `gang` plugin: without it a replica's pods "
                "start one by one, and a partly placed replica holds GPUs while it waits for the rest forever",
                "do not disable `gang`",
            )
        )
    if constrained and spec.topology is not None and spec.topology.hyper_nodes == "none":
        problems.append(
            Problem(
                "topology.hyperNodes",
                f"models {', '.join(constrained)} have topology constraints but no HyperNodes describe the network",
                "use `hyperNodes: discovery` or `explicit`",
                severity="warning",
            )
        )
    return problems


def scheduler_plugin_removed(spec: PlatformSpec, name: str) -> bool:
    settings = spec.config.volcano.scheduler.plugins.get(name)
    return settings is not None and not settings.enabled
