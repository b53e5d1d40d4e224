"""`whatif --lose` as a reviewer reads it: per model, what the loss does to it (still running,
placed again, evicted for another's placement, Pending and why), and per tenant whether its
`guarantee` still holds; answered by the same engine on the cluster as it is and after the loss."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.schema.quantity import quantity_value
from config.spec.platform import PlatformSpec
from offline.markdown import code
from whatif.loss import Lost
from whatif.predict import NEVER, WAITS, Prediction, Verdict
from whatif.report import ICON, verdict_cells
from whatif.scheduler.engine import VOLCANO_VERSION

RUNNING, PLACED, PLACED_AGAIN, EVICTED, PENDING = "running", "placed", "placed-again", "evicted", "pending"
ORDER = {PENDING: 0, EVICTED: 1, PLACED_AGAIN: 2, PLACED: 3, RUNNING: 4}
WORDS = {
    PENDING: "Pending",
    EVICTED: "evicted for another's placement",
    PLACED_AGAIN: "placed again",
    PLACED: "placed (not running before)",
    RUNNING: "still running",
}


@dataclass
class ModelAfterLoss:
    model: str
    tenant: str
    status: str
    pods_lost: int
    before: Verdict
    after: Verdict
    otherwise: Verdict | None = None
    """Its verdict where the LeaderWorkerSet groups made again are back before the waiting work is
    placed, when that differs: which comes first is how soon LWS makes them, a race."""

    @property
    def runs(self) -> bool:
        """Whether all its pods run once the scheduler has settled after the loss."""
        return self.after.verdict not in (WAITS, NEVER)


@dataclass
class GuaranteeAfterLoss:
    tenant: str
    queue: str
    guarantee: float
    """GPUs the tenant's queue is guaranteed."""
    held: float
    """GPUs its running work holds right after the loss, before anything is placed again."""
    waiting: list[str]
    """Its models that do not run after the loss."""

    @property
    def holds(self) -> bool:
        """Broken when some of its work waits while it holds less than its guarantee."""
        return not self.waiting or self.held >= self.guarantee


@dataclass
class LossPrediction:
    lost: Lost
    models: list[ModelAfterLoss]
    tenants: list[GuaranteeAfterLoss]
    after: Prediction

    @property
    def unharmed(self) -> bool:
        calm = all(m.status in (RUNNING, PLACED, PLACED_AGAIN) and not m.after.victims for m in self.models)
        return calm and all(m.otherwise is None for m in self.models) and all(t.holds for t in self.tenants)


def compare(
    before: Prediction, after: Prediction, lost: Lost, spec: PlatformSpec, at_once: Prediction | None = None
) -> LossPrediction:
    """Per model and tenant; `at_once`: the answer where the groups made again are back at once,
    whose verdicts that differ are each model's `otherwise`."""
    was = {v.model: v for v in before.verdicts}
    other = {v.model: v for v in at_once.verdicts} if at_once is not None else {}
    evicted = {
        lost.model_of_group.get((victim.namespace, victim.pod_group))
        for verdict in after.verdicts
        for victim in verdict.victims
    }
    models = []
    for verdict in after.verdicts:
        count = len(lost.pods.get(verdict.model, []))
        if verdict.model in evicted:
            status = EVICTED
        elif verdict.verdict in (WAITS, NEVER):
            status = PENDING
        elif count:
            status = PLACED_AGAIN
        elif verdict.model in lost.running:
            status = RUNNING
        else:
            status = PLACED
        tenant = spec.models[verdict.model].tenant
        row = ModelAfterLoss(verdict.model, tenant, status, count, was[verdict.model], verdict)
        alternative = other.get(verdict.model)
        if alternative is not None and _shape(alternative) != _shape(verdict):
            row.otherwise = alternative
        models.append(row)
    models.sort(key=lambda m: (ORDER[m.status], m.model))
    return LossPrediction(lost, models, _guarantees(after, models, spec), after)


def _shape(verdict: Verdict) -> tuple[str, list[tuple[str, str]]]:
    """What a reader sees of a verdict: its kind and whom it evicts."""
    return verdict.verdict, sorted((v.namespace, v.pod_group) for v in verdict.victims)


def _guarantees(after: Prediction, models: list[ModelAfterLoss], spec: PlatformSpec) -> list[GuaranteeAfterLoss]:
    held = {t.tenant: t.allocated / 1000 for t in after.tenants}
    out = []
    for name, tenant in spec.tenants.items():
        value = tenant.config.queue.guarantee.get(spec.gpu_resource)
        if value is None:
            continue
        family = _family(spec, name)
        waiting = [m.model for m in models if not m.runs and m.tenant in family]
        out.append(
            GuaranteeAfterLoss(name, tenant.queue_name, float(quantity_value(value)), held.get(name, 0.0), waiting)
        )
    return out


def _family(spec: PlatformSpec, name: str) -> set[str]:
    """The tenant and every tenant below it: a parent's guarantee covers its children's work."""
    out, todo = set(), [name]
    while todo:
        each = todo.pop()
        out.add(each)
        todo += list(spec.tenants[each].children)
    return out


def as_json(result: LossPrediction) -> str:
    lost = result.lost
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "stack": result.after.stack,
        "source": result.after.source,
        "volcano": VOLCANO_VERSION,
        "engine": result.after.engine,
        "lost": {
            "what": [loss.text for loss in lost.losses],
            "nodes": lost.nodes,
            "gpus": lost.gpus,
            "modelPods": {model: sorted(pods) for model, pods in sorted(lost.pods.items())},
            "otherPods": sorted(lost.other_pods),
        },
        "models": [
            {
                "model": m.model,
                "tenant": m.tenant,
                "status": m.status,
                "podsLost": m.pods_lost,
                "before": m.before.verdict,
                "verdict": m.after.verdict,
                "domain": m.after.domain or None,
                "replicas": m.after.replicas,
                "victims": [victim.as_json() for victim in m.after.victims],
                "reason": m.after.reason or None,
                "note": m.after.note or None,
                "otherwise": None
                if m.otherwise is None
                else {
                    "verdict": m.otherwise.verdict,
                    "victims": [victim.as_json() for victim in m.otherwise.victims],
                    "reason": m.otherwise.reason or None,
                },
            }
            for m in result.models
        ],
        "tenants": [
            {
                "tenant": t.tenant,
                "queue": t.queue,
                "guaranteeGpus": t.guarantee,
                "heldGpus": t.held,
                "waiting": t.waiting,
                "holds": t.holds,
            }
            for t in result.tenants
        ],
    }
    return json.dumps(data, indent=2) + "\n"


def markdown(result: LossPrediction) -> str:
    lost = result.lost
    lines = [f"### If {code(lost.text)} is lost: stack {code(result.after.stack)}", ""]
    took = []
    if lost.nodes:
        took.append(
            "nodes " + ", ".join(code(n) for n in lost.nodes[:20]) + (" and more" if len(lost.nodes) > 20 else "")
        )
    took += [f"{count} GPU{'' if count == 1 else 's'} of {code(node)}" for node, count in sorted(lost.gpus.items())]
    pods = sum(len(p) for p in lost.pods.values())
    lines.append(
        f"Lost: {'; '.join(took) or 'nothing'}; with them {_pods(pods)} of the stack's models and "
        f"{_pods(len(lost.other_pods))} beside them (made again Pending where a controller owns them)."
    )
    lines.append("")
    counts = {status: sum(1 for m in result.models if m.status == status) for status in ORDER}
    lines.append(", ".join(f"**{counts[s]}** {WORDS[s]}" for s in ORDER if counts[s]) or "no models")
    lines += [
        "",
        "| model | after the loss | pods lost | verdict | where / why | evicts |",
        "|---|---|---|---|---|---|",
    ]
    for m in result.models:
        said = WORDS[m.status]
        if m.otherwise is not None:
            said += f" (or **{ICON[m.otherwise.verdict]}** if the groups made again are back first)"
        lines.append(f"| {code(m.model)} | {said} | {m.pods_lost} | {verdict_cells(m.after)} |")
    lines.append("")
    if any(m.otherwise is not None for m in result.models):
        lines += [
            "A LeaderWorkerSet group that lost a pod is made again only once the rest of it has gone: work waiting "
            "for its room is placed first unless LWS is back before the scheduler's next cycle, so both are shown.",
            "",
        ]
    if result.tenants:
        lines += ["| tenant | guaranteed GPUs | held after the loss | waiting | guarantee |", "|---|---|---|---|---|"]
        for t in result.tenants:
            waiting = ", ".join(code(m) for m in t.waiting) or "-"
            verdict = "holds" if t.holds else "**broken**"
            lines.append(f"| {code(t.tenant)} | {t.guarantee:g} | {t.held:g} | {waiting} | {verdict} |")
        lines.append("")
    who = "Volcano's own scheduling code" if result.after.engine == "volcano" else "the project's model of Volcano"
    lines.append(
        f"Answered by {who} ({VOLCANO_VERSION}, policy {result.after.policy}) on {code(result.after.source)} after "
        "the loss, as the cluster's controllers leave it: a lost node's pods deleted and made again Pending, "
        "a LeaderWorkerSet group that lost a pod made again whole, lost GPUs taken from the node's count."
    )
    return "\n".join(lines) + "\n"


def _pods(count: int) -> str:
    return f"{count} pod" + ("" if count == 1 else "s")


def explain_markdown(result: LossPrediction, model: str) -> str:
    m = next(each for each in result.models if each.model == model)
    text = f"If {code(result.lost.text)} is lost, {code(model)} is {WORDS[m.status]}"
    if m.pods_lost:
        text += f" ({m.pods_lost} of its pods were on what is lost)"
    if m.runs and m.after.domain:
        text += f", in {code(m.after.domain)}"
    if m.after.victims:
        text += ", evicting " + ", ".join(code(f"{v.namespace}/{v.pod_group}") for v in m.after.victims)
    if not m.runs:
        text += f": {ICON[m.after.verdict]}, {m.after.reason}"
    return text + ".\n"
