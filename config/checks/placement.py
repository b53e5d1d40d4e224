"""Checks of where a model's pods may go: topology constraints that can be enforced, and pods that fit one node."""

from __future__ import annotations

from decimal import Decimal

from config.errors import Problem, join_path
from config.schema.quantity import quantity_value
from config.spec.model import ModelSpec
from config.spec.placement import replicas_key
from config.spec.platform import PlatformSpec
from config.upstream.lws import LWS_NAME_MAX


def check_placement_options(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    cfg = model.config
    path = join_path("models", model.name)
    problems: list[Problem] = []
    if cfg.topology is not None and not cfg.multi_node and not cfg.disaggregated:
        problems.append(
            Problem(
                join_path(path, "topology"),
                "a topology constraint applies to multi-node models only (one pod has no network span)",
                "remove `topology`, or set `nodesPerReplica` > 1",
            )
        )
    for constrained in (model, *model.role_views):
        if constrained.config.topology is not None and (constrained.config.uses_lws or constrained.serving_role):
            problems += _enforceable(spec, constrained)
    problems += _peak_spill(spec, model)
    problems += _no_spare_domain(spec, model)
    if cfg.multi_node and cfg.port == cfg.ray.port:
        problems.append(
            Problem(
                join_path(path, "port"),
                f"port {cfg.port} is also the Ray head port",
                "use another port (or move `ray.port`)",
                got=cfg.port,
            )
        )
    return problems


def _enforceable(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A topology constraint (a model's, a slice's or a role's) that HyperNodes can enforce."""
    cfg = model.config
    assert cfg.topology is not None
    path = model.key_path
    problems: list[Problem] = []
    if spec.config.lws.gang_scheduling and not (cfg.disaggregated or model.serving_role):
        problems.append(
            Problem(
                join_path(path, "topology"),
                "with `lws.gangScheduling: true` LWS makes the "
                "PodGroups itself, without network topology, so this constraint would be ignored",
                "turn `lws.gangScheduling` off (the platform then makes topology-aware PodGroups), "
                "or remove the constraint",
            )
        )
    elif spec.topology is None:
        hard = cfg.topology.mode == "hard"
        problems.append(
            Problem(
                join_path(path, "topology"),
                "the stack describes no `topology`, so no HyperNodes exist to enforce this constraint"
                + ("; a hard constraint would leave every replica Pending or unconstrained" if hard else ""),
                "describe the network under `topology`, or remove the constraint",
                severity="error" if hard else "warning",
            )
        )
    if cfg.topology.mode == "hard" and cfg.topology.highest_tier is None and cfg.topology.highest_tier_name is None:
        problems.append(
            Problem(
                join_path(path, "topology", "mode"),
                "hard mode without a tier applies no limit at all, which is not what `hard` promises",
                "set `highestTier` (1 = leaf), or use `mode: soft`",
                got="hard",
            )
        )
    return problems


def _peak_spill(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A soft-placed autoscaled model whose replicas all fit the leaves at `minReplicas` but not at
    `maxReplicas`: the spill shows only at the peak, when the network matters most."""
    cfg = model.config
    scaling = cfg.autoscaling
    if not cfg.multi_node or cfg.topology is None or cfg.topology.mode != "soft" or scaling is None:
        return []
    if spec.topology is None or spec.topology.top_tier < 2:
        return []
    per_leaf = [d.pods_that_fit(model.gpus_per_pod) // model.gang.pods for d in spec.topology.at_tier(1)]
    in_leaves = sum(per_leaf)
    if not scaling.min_replicas <= in_leaves < scaling.max_replicas:
        return []
    return [
        Problem(
            join_path("models", model.name, "autoscaling", "maxReplicas"),
            f"even on an empty cluster only {in_leaves} replica(s) fit inside one leaf each; above that, at the peak "
            "the autoscaler reaches under load, replicas span leaves and run on the slower network",
            f"keep `maxReplicas` at {in_leaves} or below, add nodes to the leaves, or accept the spill at the peak",
            got=scaling.max_replicas,
            severity="warning",
        )
    ]


def _no_spare_domain(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A hard-topology multi-node model whose replicas take every slot its pools' domains have at
    its tier: once a node (or, with `cluster.failureMargin: domain`, a tier-1 domain) is lost, the
    replica that ran there has no domain to be placed again in until the hardware returns. Counted
    for the model alone, on the pools at their largest."""
    cfg = model.config
    margin = spec.config.cluster.failure_margin
    if margin == "none" or spec.topology is None or not cfg.multi_node or model.highest_tier is None:
        return []
    if cfg.topology is None or cfg.topology.mode != "hard" or cfg.disaggregated:
        return []
    tier, pods, per_pod = model.highest_tier, model.gang.pods, model.gpus_per_pod
    domains = [d for d in spec.topology.at_tier(tier) if model.pools is None or d.pool in model.pools]
    slots = {d.name: d.pods_that_fit(per_pod) // pods for d in domains}
    if not domains or sum(slots.values()) < cfg.planned_replicas:
        return []  # it does not fit at all: placement says so
    worst = 0
    for leaf in spec.topology.at_tier(1):
        top = leaf
        while top.tier < tier and top.parent is not None:
            top = spec.topology.domains[top.parent]
        if top.name not in slots:
            continue
        lost = leaf.pods_that_fit(per_pod) if margin == "domain" else max(g // per_pod for g, _ in leaf.capacity)
        worst = max(worst, slots[top.name] - (top.pods_that_fit(per_pod) - lost) // pods)
    left = sum(slots.values()) - worst
    if left >= cfg.planned_replicas:
        return []
    what = "a tier-1 domain" if margin == "domain" else "a node"
    return [
        Problem(
            replicas_key(model, join_path("models", model.name)),
            f"its {cfg.planned_replicas} replica(s) each need {pods} nodes inside one tier-{tier} domain, and its "
            f"pools have room for {sum(slots.values())}; after losing {what} {left} remain, so the replica that ran "
            "there waits until the hardware returns",
            f"keep a spare: at most {left} replica(s), or more nodes in the pool's domains, or accept it with "
            "`cluster.failureMargin: none`",
            got=cfg.planned_replicas,
            severity="warning" if margin is None else "error",
        )
    ]


def check_node_capacity(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A pod must fit one node; with the node's allocatable unknown, only absurd requests are caught."""
    node = spec.config.cluster.node
    problems: list[Problem] = []
    for resource, requested, allocatable, absurd in (
        ("cpu", model.config.resources.cpu, node.cpu, Decimal(1024)),
        ("memory", model.config.resources.memory, node.memory, Decimal(64 * 2**40)),
    ):
        value = quantity_value(requested)
        limit = quantity_value(allocatable) if allocatable is not None else absurd
        if value > limit:
            known = allocatable is not None
            problems.append(
                Problem(
                    join_path(model.key_path, "resources", resource),
                    f"each pod requests {requested} {resource}, more than "
                    + (
                        f"a GPU node's allocatable {allocatable} (`cluster.node.{resource}`)"
                        if known
                        else "any node has"
                    )
                    + "; the pods would stay Pending",
                    f"request at most what one node offers (spread the model over more nodes with {model.nodes_key})",
                    got=requested,
                )
            )
    return problems


def check_disaggregation(spec: PlatformSpec, model: ModelSpec) -> list[Problem]:
    """A model with prefill and decode apart: its roles, the slice around them, their ratio and
    their ports (docs/operations.md, "Prefill and decode apart")."""
    cfg = model.config
    path = join_path("models", model.name)
    if not model.disaggregated:
        if cfg.disaggregation is not None:
            return [
                Problem(
                    join_path(path, "disaggregation"),
                    "the model has no `roles`, so nothing reads its disaggregation settings",
                    "give the model `roles.prefill` and `roles.decode`, or remove `disaggregation`",
                )
            ]
        return []
    problems = _whole_model_keys(model, path)
    if not spec.config.network_policies.enabled:
        problems.append(
            Problem(
                join_path(path, "roles", "decode"),
                "decode's routing sidecar sends a request's prefill to whatever address its `x-prefiller-host-port` "
                "header names, and any client can send that header through the gateway (the router never removes "
                "it); only the egress NetworkPolicy the platform renders for decode keeps that address to the "
                "slice's prefill pods, and `networkPolicies.enabled` is off",
                "turn `networkPolicies.enabled` back on (the cluster's network plugin must enforce NetworkPolicies)",
                severity="error" if cfg.gateway.enabled else "warning",
            )
        )
    if not cfg.gateway.enabled:
        problems.append(
            Problem(
                join_path(path, "roles", "prefill"),
                "requests reach the model through its Service, where no router names a prefill pod: decode's sidecar "
                "prefills on decode, and the prefill instances hold their GPUs without work",
                "serve the model through the gateway (`gateway.enabled`: a router per slice pairs prefill and decode "
                "of the slice), or give prefill `autoscaling` with `minInstances: 0`",
                severity="warning",
            )
        )
    prefill, decode = model.role("prefill"), model.role("decode")
    roles = cfg.roles
    assert roles is not None
    if decode.min_replicas == 0:
        key = "autoscaling.minInstances" if roles.decode.autoscaling is not None else "instances"
        problems.append(
            Problem(
                join_path(path, "roles", "decode", *key.split(".")),
                "decode at zero instances serves nothing: every request enters a slice through decode's sidecar",
                "give decode at least one instance per slice (prefill may go to zero: decode then prefills itself)",
                got=0,
            )
        )
    if prefill.config.tensor_parallel > decode.config.tensor_parallel:
        problems.append(
            Problem(
                join_path(path, "roles", "prefill", "engine", "tensorParallelSize"),
                f"prefill's tensor parallelism ({prefill.config.tensor_parallel}) is above decode's "
                f"({decode.config.tensor_parallel}); vLLM's NixlConnector transfers between tensor-parallel sizes "
                "only when decode's is at least prefill's (llm-d/llm-d issue 2187)",
                "give prefill at most decode's tensor parallelism (more prefill instances instead)",
                got=prefill.config.tensor_parallel,
            )
        )
    longest = max((view.workload_name for view in model.slice_views()), key=len, default="")
    if len(longest) > LWS_NAME_MAX:
        problems.append(
            Problem(
                path,
                f"the LeaderWorkerSet `{longest}` of a slice's role would be {len(longest)} characters long, at most "
                f"{LWS_NAME_MAX} are allowed (its StatefulSets and revisions add to the name)",
                f"shorten the model's name to at most {LWS_NAME_MAX - len(longest) + len(model.name)} characters",
                got=model.name,
            )
        )
    for view, role in zip(model.role_views, (roles.prefill, roles.decode), strict=True):
        problems += _role_tier(model, view)
        if view.gpus_per_pod == 0:
            problems.append(
                Problem(
                    join_path(view.key_path, "resources", "gpus"),
                    f"a {view.serving_role} instance without GPUs holds no KV cache to pass on",
                    "give the role GPUs (`resources.gpus`)",
                    got=0,
                )
            )
        if role.autoscaling is not None and not spec.config.observability.enabled:
            problems.append(
                Problem(
                    join_path(view.key_path, "autoscaling"),
                    "the role's autoscaler follows its vLLM metrics, which are scraped only with observability on",
                    "set `observability.enabled: true` (prometheus-operator and KEDA on the cluster), or remove it",
                )
            )
    problems += _ratio(model, path)
    problems += _ports(model, path)
    return problems


def _whole_model_keys(model: ModelSpec, path: str) -> list[Problem]:
    """Keys of a whole model that a model with roles sets per role instead."""
    cfg = model.config
    problems = []
    for key, given, instead in (
        ("autoscaling", cfg.autoscaling is not None, "`roles.<role>.autoscaling`"),
        ("nodesPerReplica", cfg.nodes_per_replica > 1, "`roles.<role>.nodesPerInstance`"),
        ("adopt", bool(cfg.adopt), "nothing: the slices' PodGroups and LeaderWorkerSets are created by the stack"),
    ):
        if given:
            problems.append(
                Problem(
                    join_path(path, key),
                    f"`{key}` applies to a model without `roles`; with roles each slice is a gang of its roles",
                    f"remove `{key}` and use {instead}",
                )
            )
    return problems


def _role_tier(model: ModelSpec, role: ModelSpec) -> list[Problem]:
    """A role's instances stay inside a domain no wider than the slice's: Volcano places a sub-group
    only under the HyperNode its job was given (volcano v1.15.1 pkg/scheduler/actions/allocate/
    allocate.go, allocateForJob with the job's allocated HyperNode)."""
    if role.highest_tier is None or model.highest_tier is None or role.highest_tier <= model.highest_tier:
        return []
    return [
        Problem(
            join_path(role.key_path, "topology", "highestTier"),
            f"each {role.serving_role} instance may span tier {role.highest_tier}, wider than its slice's tier "
            f"{model.highest_tier} (`models.{model.name}.topology`), which holds the whole slice",
            f"give the role a tier of at most {model.highest_tier}, or widen the slice's",
            got=role.highest_tier,
        )
    ]


def _ratio(model: ModelSpec, path: str) -> list[Problem]:
    """The prefill/decode bounds against the instances the roles may run."""
    ratio = model.disaggregation.ratio
    prefill, decode = model.role("prefill"), model.role("decode")
    if ratio is None:
        if prefill.config.autoscaling is not None:
            return [
                Problem(
                    join_path(path, "disaggregation", "ratio"),
                    "prefill autoscales without a ratio to decode, so a burst of long prompts can grow prefill past "
                    "what decode can take in",
                    "bound it with `disaggregation.ratio: {min: <a>, max: <b>}` (prefill per decode instance)",
                    severity="warning",
                )
            ]
        return []
    problems = []
    if ratio.min * decode.min_replicas > prefill.config.planned_replicas:
        problems.append(
            Problem(
                join_path(path, "disaggregation", "ratio", "min"),
                f"at least {ratio.min:g} prefill per decode instance needs {ratio.min * decode.min_replicas:g} "
                f"prefill instance(s) for decode's {decode.min_replicas}, above prefill's most "
                f"({prefill.config.planned_replicas})",
                "lower `ratio.min`, or raise prefill's (maximum) instances",
                got=ratio.min,
            )
        )
    if ratio.max * decode.config.planned_replicas < prefill.min_replicas:
        problems.append(
            Problem(
                join_path(path, "disaggregation", "ratio", "max"),
                f"at most {ratio.max:g} prefill per decode instance allows "
                f"{ratio.max * decode.config.planned_replicas:g} prefill instance(s) at decode's most, below "
                f"prefill's fewest ({prefill.min_replicas})",
                "raise `ratio.max`, or lower prefill's (minimum) instances",
                got=ratio.max,
            )
        )
    return problems


def _ports(model: ModelSpec, path: str) -> list[Problem]:
    """The ports a decode pod opens: the sidecar on the model's `port` (and one more per data-parallel
    rank, llm-d-inference-scheduler v0.7.1 pkg/sidecar/proxy/data_parallel.go), vLLM behind it, NIXL's
    side channel (one per rank from its base); a prefill pod: vLLM and the side channel."""
    settings = model.disaggregation
    cfg = model.config
    taken = {cfg.port: "`port` (the sidecar's)", settings.sidecar.vllm_port: "`disaggregation.sidecar.vllmPort`"}
    problems = []
    side_channel = settings.nixl.side_channel_port
    if settings.sidecar.vllm_port == cfg.port:
        problems.append(
            Problem(
                join_path(path, "disaggregation", "sidecar", "vllmPort"),
                f"decode's vLLM and the sidecar in front of it would both listen on {cfg.port}",
                "give `disaggregation.sidecar.vllmPort` another port (default 8200)",
                got=cfg.port,
            )
        )
    elif side_channel in taken:
        problems.append(
            Problem(
                join_path(path, "disaggregation", "nixl", "sideChannelPort"),
                f"NIXL's side channel {side_channel} is also {taken[side_channel]}",
                "give the side channel a port of its own (default 5600)",
                got=side_channel,
            )
        )
    if any(
        view.config.multi_node and side_channel <= view.config.ray.port < side_channel + view.config.data_parallel
        for view in model.role_views
    ):
        problems.append(
            Problem(
                join_path(path, "disaggregation", "nixl", "sideChannelPort"),
                f"NIXL's side channel {side_channel} is also the Ray head port (`ray.port`) of a role of several "
                "nodes, on the same leader pod",
                "give the side channel a port of its own (default 5600)",
                got=side_channel,
            )
        )
    if any(view.config.multi_node and view.config.ray.port in taken for view in model.role_views):
        problems.append(
            Problem(
                join_path(path, "ray", "port"),
                f"the Ray head port {cfg.ray.port} is also one of decode's ports",
                "move `ray.port`",
                got=cfg.ray.port,
            )
        )
    return problems
