"""Which node pools a model may run on, and what its pods say to get there.

A model names its pools, or runs on every pool its node selector, tolerations and GPU resource
allow. Its pods then select those pools' nodes (one pool: a node selector; several: the labels they
alone share, else node affinity with a term per pool) and tolerate their taints, so the pods go
exactly where placement counted them. A selector or toleration that fits no pool is refused at
its key: on a cloud cluster a typo there leaves a model Pending forever.
"""

from __future__ import annotations

from config.errors import Problem, join_path
from config.sections.models import ModelConfig
from config.spec.pools import Pool

SYSTEM_TAINT_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "node-role.kubernetes.io/")
"""Taints Kubernetes itself sets (not-ready, unreachable, uninitialized...): a toleration of them
says nothing about pools."""
WELL_KNOWN_LABEL_DOMAINS = ("kubernetes.io", "k8s.io")
"""Label domains (and their subdomains) of labels every node may carry (`kubernetes.io/arch`,
`topology.kubernetes.io/zone`, `node.kubernetes.io/instance-type`)."""


def _well_known(key: str) -> bool:
    prefix = key.rpartition("/")[0]
    return any(prefix == domain or prefix.endswith(f".{domain}") for domain in WELL_KNOWN_LABEL_DOMAINS)


def model_pools(
    name: str, model: ModelConfig, gpu_resource: str, pools: dict[str, Pool], tiers: tuple[str, ...]
) -> tuple[tuple[str, ...] | None, list[Problem]]:
    """The pools a model's pods may run on: the ones it names, else every pool its node selector,
    tolerations and GPU resource allow; problems at the key that rules out the last pool."""
    base = join_path("models", name)
    if not pools:
        if model.pools:
            return None, [
                Problem(
                    join_path(base, "pools"),
                    "the stack declares no `pools`",
                    "declare the cluster's node pools under `pools`, or remove the model's `pools`",
                    got=list(model.pools),
                )
            ]
        return None, []
    problems: list[Problem] = []
    if model.pools:
        for index, pool in enumerate(model.pools):
            if pool not in pools:
                problems.append(
                    Problem(
                        join_path(base, "pools", index),
                        f"pool `{pool}` does not exist",
                        "use one of: " + ", ".join(pools),
                        got=pool,
                    )
                )
        candidates = [p for p in model.pools if p in pools]
    else:
        candidates = list(pools)
    problems += _selector_problems(base, model, pools, candidates, tiers)
    problems += _toleration_problems(base, model, pools)
    if problems:
        return None, problems
    allowed = [p for p in candidates if _selects(model.node_selector, pools[p])]
    if model.resources.gpus:
        allowed = [p for p in allowed if pools[p].resource == gpu_resource and pools[p].gpus_per_node]
    if not model.pools:
        allowed = [p for p in allowed if _tolerates(model, pools[p])]
    if not allowed:
        return None, [
            Problem(
                join_path(base, "pools"),
                f"no pool can run the model: none offers {gpu_resource}"
                + (" with the taints tolerated" if not model.pools else ""),
                "name the pools it runs on under `pools` (its tolerations follow), or give a pool the accelerator",
            )
        ]
    return tuple(allowed), []


def _selects(selector: dict[str, str], pool: Pool) -> bool:
    return all(pool.labels.get(key, value) == value for key, value in selector.items())


def _selector_problems(
    base: str, model: ModelConfig, pools: dict[str, Pool], candidates: list[str], tiers: tuple[str, ...]
) -> list[Problem]:
    problems: list[Problem] = []
    remaining = list(candidates)
    for key, value in model.node_selector.items():
        path = join_path(base, "nodeSelector", key)
        declared = {p: pools[p].labels[key] for p in candidates if key in pools[p].labels}
        known = key in tiers or _well_known(key)
        if not declared and not known and not any(key in p.labels for p in pools.values()):
            problems.append(
                Problem(
                    path,
                    f"no pool declares the label `{key}`, so the plan cannot tell which nodes carry it",
                    "add it to the `selector` of the pool whose nodes all carry it, or remove it"
                    + ("" if model.pools else " and name the model's pools under `pools`"),
                    got=value,
                )
            )
            continue
        remaining = [p for p in remaining if pools[p].labels.get(key, value) == value]
        if not remaining:
            values = ", ".join(f"`{p}`: {v}" for p, v in declared.items())
            problems.append(
                Problem(
                    path,
                    f"`{key}: {value}` matches no pool" + (f" the model may use ({values})" if values else ""),
                    "use a value a pool's nodes carry, or name the model's pools under `pools`",
                    got=value,
                )
            )
            break
    return problems


def _tolerates(model: ModelConfig, pool: Pool) -> bool:
    return all(
        any(toleration_matches(t.model_dump(by_alias=True, exclude_none=True), taint) for t in model.tolerations)
        for taint in pool.taints
        if taint["effect"] in ("NoSchedule", "NoExecute")
    )


def toleration_matches(toleration: dict[str, object], taint: dict[str, str]) -> bool:
    """`Toleration.ToleratesTaint` of `k8s.io/api/core/v1/toleration.go`."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    key = toleration.get("key")
    if key and key != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == taint.get("value", "")


def _toleration_problems(base: str, model: ModelConfig, pools: dict[str, Pool]) -> list[Problem]:
    problems: list[Problem] = []
    taints = [taint for pool in pools.values() for taint in pool.taints]
    for index, toleration in enumerate(model.tolerations):
        raw = toleration.model_dump(by_alias=True, exclude_none=True)
        key = raw.get("key") or ""
        if not key or key.startswith(SYSTEM_TAINT_PREFIXES):
            continue
        if not any(toleration_matches(raw, taint) for taint in taints):
            problems.append(
                Problem(
                    join_path(base, "tolerations", index),
                    f"the toleration of `{key}` matches no taint of any pool",
                    "tolerate a taint a pool declares (`pools.<pool>.taints`), or name the model's pools under `pools` "
                    "(their taints are tolerated for you)",
                    got=raw,
                )
            )
    return problems


def scheduling_constraints(
    model: ModelConfig, allowed: tuple[str, ...] | None, pools: dict[str, Pool]
) -> tuple[dict[str, str], tuple[dict[str, str], ...], tuple[dict[str, object], ...]]:
    """(node selector, node-affinity terms (one per pool, any of them), tolerations) of the pods: the
    model's own, narrowed to its pools and tolerating their taints."""
    selector = dict(model.node_selector)
    terms: tuple[dict[str, str], ...] = ()
    tolerations = [t.model_dump(by_alias=True, exclude_none=True) for t in model.tolerations]
    if allowed is None or (not model.pools and len(allowed) == len(pools)):
        return selector, terms, tuple(tolerations)
    chosen = [pools[p] for p in allowed]
    common = {k: v for k, v in chosen[0].config.selector.items() if all(p.config.selector.get(k) == v for p in chosen)}
    others = [p for name, p in pools.items() if name not in allowed]
    if len(chosen) == 1 or (common and not any(_selects(common, p) for p in others)):
        selector = {**common, **selector}
    else:
        terms = tuple({**dict(p.config.selector), **selector} for p in chosen)
        selector = {}
    for pool in chosen:
        for taint in pool.taints:
            wanted: dict[str, object] = {"key": taint["key"], "effect": taint["effect"]}
            wanted.update(
                {"operator": "Equal", "value": taint["value"]} if "value" in taint else {"operator": "Exists"}
            )
            if not any(_covers(t, wanted) for t in tolerations):
                tolerations.append(wanted)
    return selector, terms, tuple(tolerations)


def _covers(toleration: dict[str, object], wanted: dict[str, object]) -> bool:
    taint = {"key": str(wanted["key"]), "effect": str(wanted["effect"])}
    if "value" in wanted:
        taint["value"] = str(wanted["value"])
    return toleration_matches(toleration, taint)
