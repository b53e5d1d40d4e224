"""The what-if as a reviewer reads it (Markdown, evictions and models that cannot run first) and
as tools read it (`--json`, `schema/whatif.schema.json`)."""

from __future__ import annotations

import json
from typing import Any

from config.errors import one_line
from offline.markdown import code
from whatif.predict import EVICTS, FITS, NEVER, WAITS, Prediction, Verdict
from whatif.scheduler.engine import VOLCANO_VERSION

SCHEMA_VERSION = 2
ORDER = {NEVER: 0, EVICTS: 1, WAITS: 2, FITS: 3}
ICON = {NEVER: "never runs", EVICTS: "evicts", WAITS: "waits", FITS: "fits"}
NOT_MODELLED = (
    "pod affinity, volumes, DRA, node scores beyond binpack and least-requested (ties are taken by name where "
    "the scheduler picks at random), shuffle, and pods that other controllers create later"
)


def as_json(prediction: Prediction) -> str:
    data: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "stack": prediction.stack,
        "source": prediction.source,
        "volcano": VOLCANO_VERSION,
        "engine": prediction.engine,
        "policy": prediction.policy,
        "notModelled": prediction.not_modelled,
        "models": [
            {
                "model": v.model,
                "verdict": v.verdict,
                "domain": v.domain or None,
                "headroomGpus": v.headroom,
                "victims": [victim.as_json() for victim in v.victims],
                "reason": v.reason or None,
                "note": v.note or None,
                "volcanoMessage": v.volcano_message or None,
                "races": v.races,
                "inOrder": v.in_order,
                "replicas": v.replicas,
            }
            for v in _ordered(prediction.verdicts)
        ],
        "tenants": [t.as_json() for t in prediction.tenants],
    }
    return json.dumps(data, indent=2) + "\n"


def _ordered(verdicts: list[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: (ORDER[v.verdict], v.model))


def _gpus(value: float | None) -> str:
    return "unlimited" if value is None or value == float("inf") else f"{value:g}"


def markdown(prediction: Prediction, before: Prediction | None = None) -> str:
    """The report; with `before` (the base revision's what-if on the same cluster), the verdicts
    the change makes lead (before → after), then every other model."""
    lines = [f"### What the scheduler will do: stack {code(prediction.stack)}", ""]
    counts = {k: sum(1 for v in prediction.verdicts if v.verdict == k) for k in ORDER}
    lines.append(", ".join(f"**{counts[k]}** {ICON[k]}" for k in ORDER if counts[k]) or "no models")
    lines.append("")
    rest = _ordered(prediction.verdicts)
    if before is not None:
        was = {v.model: v for v in before.verdicts}
        changed = [v for v in rest if v.model not in was or _changed(was[v.model], v)]
        gone = sorted(set(was) - {v.model for v in prediction.verdicts})
        rest = [v for v in rest if v not in changed]
        if changed or gone:
            lines += ["#### Verdicts this change makes", ""]
            lines += ["| model | before | after | where / why | evicts |", "|---|---|---|---|---|"]
            for v in changed:
                then = f"**{ICON[was[v.model].verdict]}**" if v.model in was else "(new)"
                lines.append(f"| {code(v.model)} | {then} | {verdict_cells(v)} |")
            lines += [f"| {code(m)} | **{ICON[was[m].verdict]}** | (removed) | - | - |" for m in gone]
            lines.append("")
            lines += survives_one_node(changed)
        else:
            lines += ["No verdict changes with this change: every model is answered as before it.", ""]
        if rest:
            lines += ["#### Every other model", ""]
    if rest:
        lines += ["| model | verdict | where / why | evicts |", "|---|---|---|---|"]
        lines += [f"| {code(v.model)} | {verdict_cells(v)} |" for v in rest]
        lines.append("")
    exposed = [t for t in prediction.tenants if t.reclaimable or t.over_capability]
    if exposed:
        lines += [
            "| tenant | queue | allocated / deserved / capability GPUs | exposed running work |",
            "|---|---|---|---|",
        ]
        for t in exposed:
            work = ", ".join(code(f"{x.namespace}/{x.pod_group}") for x in t.reclaimable[:8])
            if len(t.reclaimable) > 8:
                work += f" and {len(t.reclaimable) - 8} more"
            flags = "over capability; " if t.over_capability else ""
            lines.append(
                f"| {code(t.tenant)} | {code(t.queue)} | {t.allocated / 1000:g} / {t.deserved / 1000:g} / "
                f"{_gpus(t.limit / 1000 if t.limit != float('inf') else None)} | {flags}reclaimable: {work or '-'} |"
            )
        lines.append("")
    if prediction.engine == "volcano":
        lines.append(
            f"Answered by Volcano {VOLCANO_VERSION}'s own scheduling code (its scheduler cache, actions and plugins, "
            f"run on the snapshot cycle after cycle) with the stack's policy ({prediction.policy}) on "
            f"{code(prediction.source)}"
            + ("" if prediction.ties_tried else ", once at this size (a random tie between equal nodes is not shown)")
            + "; the reasons are the project's, read on the cluster as Volcano left it (`Volcano says` quotes "
            "Volcano's own message where the project has no sentence for it). Volume claims are checked only for "
            "whether they exist."
        )
    else:
        lines.append(
            f"An estimate of the next decisions of Volcano {VOLCANO_VERSION} by the project's model of it, with the "
            f"stack's policy ({prediction.policy}) on {code(prediction.source)}. Not modelled: {NOT_MODELLED}"
            + (f"; unknown to the model here: {', '.join(prediction.not_modelled)}" if prediction.not_modelled else "")
            + "."
        )
    return "\n".join(lines) + "\n"


def survives_one_node(verdicts: list[Verdict]) -> list[str]:
    """Whether each placed model keeps serving when any one node is lost: some replica shares no
    node with the others' common ones (`whatif --lose` says what is placed again, and where)."""
    said = []
    for v in verdicts:
        if v.verdict not in (FITS, EVICTS) or not v.replicas:
            continue
        shared = set.intersection(*(set(nodes) for nodes in v.replicas))
        said.append(
            f"{code(v.model)} **no** (every replica on {code(sorted(shared)[0])})" if shared else f"{code(v.model)} yes"
        )
    return [f"Keeps serving when any one node is lost: {'; '.join(said)}.", ""] if said else []


def _changed(was: Verdict, now: Verdict) -> bool:
    """A verdict a reviewer would see change: its kind, or whom it evicts."""
    victims = sorted((v.namespace, v.pod_group) for v in now.victims)
    return was.verdict != now.verdict or victims != sorted((v.namespace, v.pod_group) for v in was.victims)


def verdict_cells(v: Verdict) -> str:
    """The verdict, where or why, and whom it evicts, as table cells."""
    where = f"domain {code(v.domain)}" if v.domain else ""
    if len(v.replicas) > 1:
        shown = ", ".join(code("+".join(nodes)) for nodes in v.replicas[:8])
        where += f"; replicas on {shown}" + (f" and {len(v.replicas) - 8} more" if len(v.replicas) > 8 else "")
    if v.headroom is not None and v.verdict in (FITS, EVICTS):
        where += f"; queue headroom {v.headroom:g} GPUs after"
    if v.reason:
        where = one_line(v.reason, keep_backticks=True).replace("|", "\\|")
    if v.note:
        note = one_line(v.note, keep_backticks=True).replace("|", "\\|")
        where += f" ({note})"
    victims = "<br>".join(
        f"{x.action} {code(x.namespace + '/' + x.pod_group)} (queue {code(x.queue)}, priority {x.priority}, "
        f"{x.gpus:g} GPUs, {code(x.domain)})"
        for x in v.victims[:10]
    )
    if len(v.victims) > 10:
        victims += f"<br>and {len(v.victims) - 10} more"
    return f"**{ICON[v.verdict]}** | {where} | {victims or '-'}"


def explain_markdown(prediction: Prediction, model: str) -> str:
    verdict = next(v for v in prediction.verdicts if v.model == model)
    headroom = (
        f" Its queue keeps {verdict.headroom:g} GPUs below its limit afterwards."
        if verdict.headroom is not None
        else ""
    )
    if verdict.verdict == FITS:
        text = f"{code(model)} runs: every pod fits" + (f" in {code(verdict.domain)}" if verdict.domain else "") + "."
        text += headroom
    elif verdict.verdict == EVICTS:
        names = ", ".join(code(f"{v.namespace}/{v.pod_group}") for v in verdict.victims)
        text = f"{code(model)} starts once {names} have been evicted for it.{headroom}\n\n" + "\n".join(
            f"- {code(f'{v.namespace}/{v.pod_group}')}: {v.action} from queue {code(v.queue)}, priority "
            f"{v.priority}, {v.gpus:g} GPUs" + (f", in {code(v.domain)}" if v.domain else "")
            for v in verdict.victims
        )
    else:
        text = f"{code(model)} {ICON[verdict.verdict]}: {verdict.reason}."
    if verdict.note:
        text += f" ({verdict.note})"
    answered = "Volcano's own scheduling code" if prediction.engine == "volcano" else "the model of Volcano's scheduler"
    return text + f"\n\nAnswered by {answered}.\n"
