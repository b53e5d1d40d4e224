"""Queue changes Volcano's queue webhook refuses in the order `pulumi up` applies them.

`up` applies a parent queue before its children (the children depend on it). Volcano's validating
webhook checks each queue against the others as they are at that moment
(`validateHierarchicalQueueResources`, pkg/webhooks/admission/queues/validate/validate_queue.go,
v1.15.1): a parent's new capability must hold every child's current capability, and its new
deserved and guarantee the sum of its children's current ones. A change that lowers a parent
together with its children is therefore refused at the parent, though the stack's end state is
valid: the children have to be lowered first, in an `up` of their own.
"""

from __future__ import annotations

from typing import Any

from config.schema.quantity import quantity_problem, quantity_value
from live.cluster_state import ClusterState
from live.preflight.report import Finding, Report
from offline.manifests import Rendered


def _amounts(resources: Any) -> dict[str, float]:
    """Quantities by resource; one that does not parse is left out (other findings name it)."""
    return {
        str(k): float(quantity_value(str(v))) for k, v in (resources or {}).items() if quantity_problem(str(v)) is None
    }


def check_queue_order(rendered: Rendered, state: ClusterState, report: Report) -> None:
    live = {q["metadata"]["name"]: q for q in state.queues}
    for queue in rendered.by_kind("Queue"):
        if queue.patch or queue.name not in live:
            continue
        spec = queue.manifest.get("spec") or {}
        children = [q for q in live.values() if (q.get("spec") or {}).get("parent") == queue.name]
        if not children:
            continue
        problems = []
        capability = _amounts(spec.get("capability"))
        for child in children:
            for resource, amount in _amounts((child.get("spec") or {}).get("capability")).items():
                if resource in capability and amount > capability[resource]:
                    problems.append(
                        f"child `{child['metadata']['name']}` has capability {resource} {amount:g} now, above "
                        f"the new {capability[resource]:g}"
                    )
        for field, read in (
            ("deserved", lambda s: s.get("deserved")),
            ("guarantee", lambda s: (s.get("guarantee") or {}).get("resource")),
        ):
            limit = _amounts(read(spec))
            total: dict[str, float] = {}
            for child in children:
                for resource, amount in _amounts(read(child.get("spec") or {})).items():
                    total[resource] = total.get(resource, 0.0) + amount
            problems += [
                f"its children's {field} {resource} is {amount:g} now, above the new {limit[resource]:g}"
                for resource, amount in sorted(total.items())
                if resource in limit and amount > limit[resource]
            ]
        if problems:
            report.add(
                Finding(
                    "queue-order",
                    "error",
                    f"Queue {queue.name}",
                    f"`pulumi up` updates queue `{queue.name}` before its children, and Volcano's queue webhook "
                    "checks it against its children as they are now: " + "; ".join(problems),
                    "lower the children first (their `queue.capability`, `deserved`, `guarantee`) in an `up` of "
                    "their own, then the parent in the next",
                )
            )
