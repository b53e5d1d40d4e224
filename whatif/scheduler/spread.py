"""Pod topology spread as Volcano runs it: Kubernetes' `podtopologyspread` plugin, whose filter the
`predicates` plugin calls (v1.15.1 `plugins/predicates/predicates.go`, on by default) and whose score
the `nodeorder` plugin adds at `podtopologyspread.weight` (default 2, `plugins/nodeorder/nodeorder.go`)
over the candidate nodes of a task (`BatchNodeOrderFn`).

From Kubernetes' `pkg/scheduler/framework/plugins/podtopologyspread/` at v1.35.3, the release Volcano
v1.15.1's module builds against:
- `filtering.go`: for a `DoNotSchedule` constraint, the pods matching its selector (same namespace,
  not terminating) are counted per domain (the value of its key) over the nodes that carry the key
  and pass the pod's node selector and required affinity (`nodeAffinityPolicy: Honor`, taints
  ignored). A node without the key is refused; else it is refused when its domain's count, plus one
  when the pod matches its own selector, exceeds the smallest domain's count by more than `maxSkew`.
- `scoring.go`: for `ScheduleAnyway` constraints, each candidate node scores, per constraint, its
  domain's count times `log(domains + 2)` plus `maxSkew - 1` (a hostname constraint counts the node's
  own pods), rounded; scores are normalised to `100 * (max + min - score) / max` in integers (100 for
  all when the highest is 0), so the emptiest domain scores most.

The scheduler counts the pods its session has placed too (the predicates' allocate event handler adds
them to its copy of the node), and not the ones it is evicting. Only `matchLabels` selectors and the
default policies are modelled: the stack renders no other.
"""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

from whatif.scheduler.model import ALLOCATED_STATUSES, PIPELINED, Node, Spread, Task

if TYPE_CHECKING:
    from whatif.scheduler.session import Session

COUNTED = ALLOCATED_STATUSES | {PIPELINED}
HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100
MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEWED = "node(s) didn't match pod topology spread constraints"


def spread_of(spec: dict[str, Any]) -> tuple[Spread, ...]:
    """A pod spec's constraints with a `matchLabels` selector, in order."""
    out = []
    for item in spec.get("topologySpreadConstraints") or []:
        labels = (item.get("labelSelector") or {}).get("matchLabels") or {}
        out.append(
            Spread(
                int(item.get("maxSkew", 1)),
                str(item.get("topologyKey", "")),
                item.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule",
                tuple(sorted((str(k), str(v)) for k, v in labels.items())),
            )
        )
    return tuple(out)


def _namespace(task: Task) -> str:
    return task.uid.partition("/")[0]


def _matches(constraint: Spread, labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in constraint.selector)


def _count_on(node: Node, constraint: Spread, namespace: str) -> int:
    return sum(
        1
        for other in node.tasks.values()
        if other.status in COUNTED and _namespace(other) == namespace and _matches(constraint, other.labels)
    )


def _eligible(task: Task, node: Node) -> bool:
    """`nodeAffinityPolicy: Honor`: the node passes the pod's node selector and required affinity."""
    if any(node.labels.get(key) != value for key, value in task.node_selector.items()):
        return False
    return not task.node_affinity or any(term_matches(term, node.labels) for term in task.node_affinity)


def term_matches(term: tuple[tuple[str, str, tuple[str, ...]], ...], labels: dict[str, str]) -> bool:
    """A node-selector term: every expression holds (`k8s.io/component-helpers/scheduling/corev1/nodeaffinity`)."""
    for key, operator, values in term:
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator in ("Gt", "Lt"):
            try:
                number, bound = int(labels[key]), int(values[0])
            except (KeyError, IndexError, ValueError):
                return False
            if (operator == "Gt" and number <= bound) or (operator == "Lt" and number >= bound):
                return False
    return True


def _domains(session: Session, task: Task, constraint: Spread) -> frozenset[str]:
    """The values of the constraint's key over the nodes the pod could go to that carry every
    required key: the same for every task of one node selector and affinity, so kept for the
    whole prediction (a node's labels do not change in it)."""
    required = tuple(sorted({c.key for c in task.spread if c.required}))
    key = (constraint.key, required, tuple(sorted(task.node_selector.items())), task.node_affinity)
    if key not in session.spread_domains:
        session.spread_domains[key] = frozenset(
            node.labels[constraint.key]
            for node in session.nodes.values()
            if constraint.key in node.labels and all(k in node.labels for k in required) and _eligible(task, node)
        )
    return session.spread_domains[key]


def _matching(session: Session, task: Task, constraint: Spread) -> list[Task]:
    """Every task of the session the constraint counts (its namespace, its selector), by an index
    of tasks per label built once per prediction."""
    index = session.spread_index
    if not index:
        for job in session.jobs.values():
            for each in job.tasks:
                namespace = _namespace(each)
                index.setdefault((namespace, "", ""), []).append(each)
                for label in each.labels.items():
                    index.setdefault((namespace, *label), []).append(each)
    namespace = _namespace(task)
    if not constraint.selector:
        return index.get((namespace, "", ""), [])
    sets = sorted((index.get((namespace, k, v), []) for k, v in constraint.selector), key=len)
    return [t for t in sets[0] if _matches(constraint, t.labels)]


def domain_counts(session: Session, task: Task, constraint: Spread) -> dict[str, int]:
    """Matching pods per value of the constraint's key, over the domains the pod could go to
    (every such domain present, with 0 where none runs)."""
    domains = _domains(session, task, constraint)
    counts = dict.fromkeys(domains, 0)
    for other in _matching(session, task, constraint):
        node = session.nodes.get(other.node) if other.status in COUNTED else None
        if node is not None and node.labels.get(constraint.key) in counts and _eligible(task, node):
            counts[node.labels[constraint.key]] += 1
    return counts


def spread_violation(session: Session, task: Task, node: Node) -> str | None:
    """The filter's reason to refuse `node`, None when every `DoNotSchedule` constraint allows it.
    The counts are the same for every node a task is tried on: remembered until a pod moves."""
    for constraint in task.spread:
        if not constraint.required:
            continue
        if constraint.key not in node.labels:
            return MISSING_LABEL
        key = ("spread", _namespace(task), constraint, task.shape)
        per_domain = session.while_still(key, partial(domain_counts, session, task, constraint))
        smallest = min(per_domain.values(), default=0)
        own = 1 if _matches(constraint, task.labels) else 0
        if per_domain.get(node.labels[constraint.key], 0) + own - smallest > constraint.max_skew:
            return SKEWED
    return None


def _crowded(session: Session, task: Task) -> frozenset[tuple[str, str]]:
    """(key, value) of every domain holding a pod the task's constraints count, until a pod moves."""
    return session.while_still(
        ("crowded", task.shape, _namespace(task)),
        lambda: frozenset(
            (constraint.key, session.nodes[other.node].labels.get(constraint.key, ""))
            for constraint in task.spread
            for other in _matching(session, task, constraint)
            if other.status in COUNTED and other.node in session.nodes
        ),
    )


def is_crowded(session: Session, task: Task, node: Node) -> bool:
    """Whether a domain of the node holds a pod the task's constraints count: only there do the
    filter and the score differ from a node of the same class elsewhere."""
    crowded = _crowded(session, task)
    return bool(crowded) and any((c.key, node.labels.get(c.key, "")) in crowded for c in task.spread)


def spread_candidates(session: Session, task: Task) -> list[Node]:
    """The nodes a whole-cluster search for a spread task tries: of each class of nodes the
    scheduler cannot otherwise tell apart, one in a domain without a counted pod, and every node
    in a domain with one."""
    out: list[Node] = []
    if all(c.key == HOSTNAME for c in task.spread):  # the default: the crowded nodes hold the pods
        held = {o.node for c in task.spread for o in _matching(session, task, c) if o.status in COUNTED}
        out = [session.nodes[name] for name in sorted(held) if name in session.nodes]
        spares = (next((n for n in b.values() if n.name not in held), None) for b in session.classes.values())
        return out + [n for n in spares if n is not None]
    for bucket in session.classes.values():
        spare = None
        for node in bucket.values():
            if is_crowded(session, task, node):
                out.append(node)
            elif spare is None:
                spare = node
        if spare is not None:
            out.append(spare)
    return out


def spread_scores(session: Session, task: Task, candidates: list[Node], weight: int) -> dict[str, float]:
    """The normalised score of each candidate, times `weight`; empty when the pod has no
    `ScheduleAnyway` constraint (the plugin skips)."""
    soft = [c for c in task.spread if not c.required]
    if not soft or not weight:
        return {}
    require_all = bool(task.node_selector or task.node_affinity)
    ignored = {n.name for n in candidates if require_all and any(c.key not in n.labels for c in soft)}
    scored = [n for n in candidates if n.name not in ignored]
    namespace = _namespace(task)
    raw: dict[str, int] = {}
    for_domain: list[dict[str, int]] = []
    weights = []
    for constraint in soft:
        values = {n.labels[constraint.key] for n in scored if constraint.key in n.labels}
        size = len(scored) if constraint.key == HOSTNAME else len(values)
        weights.append(math.log(size + 2))
        counts = {}
        if constraint.key != HOSTNAME:
            every = domain_counts(session, task, constraint)
            counts = {value: every.get(value, 0) for value in values}
        for_domain.append(counts)
    for node in scored:
        score = 0.0
        for constraint, counts, tp_weight in zip(soft, for_domain, weights, strict=True):
            if constraint.key not in node.labels:
                continue
            if constraint.key == HOSTNAME:
                count = _count_on(node, constraint, namespace)
            else:
                count = counts[node.labels[constraint.key]]
            score += count * tp_weight + constraint.max_skew - 1
        raw[node.name] = math.floor(score + 0.5)  # Go's math.Round: halves away from zero
    if not raw:
        return {n.name: 0.0 for n in candidates}
    low, high = min(raw.values()), max(raw.values())
    out = {name: 0.0 for name in ignored}
    for name, score in raw.items():
        normal = MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - score) // high
        out[name] = float(normal * weight)
    return out
