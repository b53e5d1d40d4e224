"""`whatif --upgrade volcano=<release>` as a reviewer reads it: the same cluster and stack answered by
the scheduling code of the release the cluster runs and of the target release, each its own build of
`volcano-session`; per model the verdict that changes (before -> after), and the upstream changes
between the two releases that can explain it (`release_changes`).

A model's answer changes when its verdict, whom it evicts, or the domain it lands in differs. Which
of several equal nodes a pod gets is Volcano's random tie (`SelectBestNodeAndScore`), so the nodes
of each replica are shown, not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.errors import one_line
from config.spec.platform import PlatformSpec
from offline.markdown import code
from whatif.predict import EVICTS, FITS, Prediction, Verdict
from whatif.report import ICON, verdict_cells
from whatif.volcano.release_changes import (
    ALLOCATE,
    ENQUEUE,
    HARD_TOPOLOGY,
    HIERARCHY,
    NODE_ORDER,
    PREEMPT,
    RECLAIM,
    SOFT_TOPOLOGY,
    SchedulingChange,
    changes_between,
)
from whatif.volcano.releases import Upgrade

CHANGED, MOVED, SAME = "changed", "moved", "same"
RUNS = (FITS, EVICTS)


@dataclass
class ModelAcrossReleases:
    model: str
    tenant: str
    running: Verdict
    """The verdict of the release the cluster runs."""
    target: Verdict
    """The verdict of the release it would run."""
    causes: list[SchedulingChange]
    """The changes between the releases that can explain the difference (empty when there is none)."""
    evicted_for: str = ""
    """The model whose changed verdict evicts this one's pods in one of the releases: its causes are
    that model's."""

    @property
    def status(self) -> str:
        """`changed`: the verdict or its victims; `moved`: the same verdict in another domain."""
        was, now = self.running, self.target
        if was.verdict != now.verdict or _victims(was) != _victims(now):
            return CHANGED
        return MOVED if was.domain != now.domain else SAME


@dataclass
class UpgradePrediction:
    upgrade: Upgrade
    running: Prediction
    target: Prediction
    models: list[ModelAcrossReleases]
    changes: list[SchedulingChange]
    """Every catalogued change between the two releases."""

    @property
    def unchanged(self) -> bool:
        return all(m.status == SAME for m in self.models) and not _policy_note(self)


def compare(upgrade: Upgrade, running: Prediction, target: Prediction, spec: PlatformSpec) -> UpgradePrediction:
    changes = changes_between(upgrade.running, upgrade.target)
    after = {v.model: v for v in target.verdicts}
    refused = bool(running.policy_refused or target.policy_refused)
    models = {}
    for was in running.verdicts:
        now = after[was.model]
        shown = set() if refused else traits(spec, was, now)  # another policy explains it all
        causes = [change for change in changes if shown and change.touches <= shown]
        models[was.model] = ModelAcrossReleases(was.model, spec.models[was.model].tenant, was, now, causes)
    owner = {group: verdict.model for verdict in running.verdicts for group in verdict.pod_groups}
    for evictor in [m for m in models.values() if m.status == CHANGED]:
        for victim in [*evictor.running.victims, *evictor.target.victims]:
            evicted = models.get(owner.get(f"{victim.namespace}/{victim.pod_group}", ""))
            if evicted is not None and evicted is not evictor and evicted.status != SAME:
                evicted.evicted_for, evicted.causes = evictor.model, evictor.causes
    order = {CHANGED: 0, MOVED: 1, SAME: 2}
    ordered = sorted(models.values(), key=lambda m: (order[m.status], m.model))
    return UpgradePrediction(upgrade, running, target, ordered, changes)


def traits(spec: PlatformSpec, was: Verdict, now: Verdict) -> set[str]:
    """What differs for a model between the releases, in the words of `release_changes.touches`
    (empty when nothing does)."""
    out: set[str] = set()
    if was.admitted != now.admitted:
        out.add(ENQUEUE)  # what follows (a placement, its victims) follows from the admission
    elif _victims(was) != _victims(now):
        out |= {PREEMPT if x.action == "preempt" else RECLAIM for x in [*was.victims, *now.victims]}
    elif (was.verdict in RUNS) != (now.verdict in RUNS):
        out.add(ALLOCATE)
    if was.domain != now.domain and was.verdict in RUNS and now.verdict in RUNS:
        out.add(NODE_ORDER)
    if not out:
        return out
    topology = spec.models[was.model].config.topology
    if topology is not None:
        out.add(SOFT_TOPOLOGY if topology.mode == "soft" else HARD_TOPOLOGY)
    if spec.hierarchy:
        out.add(HIERARCHY)
    return out


def _victims(verdict: Verdict) -> list[tuple[str, str, str]]:
    return sorted((x.namespace, x.pod_group, x.action) for x in verdict.victims)


def _policy_note(result: UpgradePrediction) -> str:
    """What a release does with the stack's scheduler configuration, where one cannot read it."""
    said = []
    for release, prediction in ((result.upgrade.running, result.running), (result.upgrade.target, result.target)):
        if prediction.policy_refused:
            said.append(
                f"Volcano {release} cannot read the stack's scheduler configuration ({prediction.policy_refused}) and "
                "keeps its default one (`enqueue, allocate, backfill`; priority, gang, conformance, overcommit, drf, "
                "predicates, proportion, nodeorder: pkg/scheduler/util.go, `DefaultSchedulerConf`)"
            )
    return "; ".join(said)


def as_json(result: UpgradePrediction) -> str:
    upgrade = result.upgrade
    data: dict[str, Any] = {
        "schemaVersion": 1,
        "stack": result.target.stack,
        "source": result.target.source,
        "running": {"release": upgrade.running, "readFrom": upgrade.read_from},
        "target": {"release": upgrade.target},
        "policyRefused": {
            release: prediction.policy_refused
            for release, prediction in ((upgrade.running, result.running), (upgrade.target, result.target))
            if prediction.policy_refused
        },
        "unchanged": result.unchanged,
        "models": [
            {
                "model": m.model,
                "tenant": m.tenant,
                "status": m.status,
                "running": _verdict_json(m.running),
                "target": _verdict_json(m.target),
                "causes": [c.commit for c in m.causes],
                "evictedFor": m.evicted_for or None,
            }
            for m in result.models
        ],
        "changes": [
            {"commit": c.commit, "pull": c.pull, "where": c.where, "behaves": sorted(c.behaves), "what": c.what}
            for c in result.changes
        ],
    }
    return json.dumps(data, indent=2) + "\n"


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "verdict": verdict.verdict,
        "domain": verdict.domain or None,
        "replicas": verdict.replicas,
        "victims": [victim.as_json() for victim in verdict.victims],
        "admitted": verdict.admitted,
        "reason": verdict.reason or None,
    }


def markdown(result: UpgradePrediction) -> str:
    upgrade = result.upgrade
    was, now = upgrade.running, upgrade.target
    lines = [f"### If Volcano {was} becomes {now}: stack {code(result.target.stack)}", ""]
    lines.append(
        f"The cluster's scheduler runs {was} ({upgrade.read_from}). Each release's own scheduling code answered "
        f"the same cluster ({code(result.target.source)}) and stack."
    )
    lines.append("")
    if note := _policy_note(result):
        lines += [f"**{note}.**", ""]
    counts = {status: sum(1 for m in result.models if m.status == status) for status in (CHANGED, MOVED, SAME)}
    if result.unchanged:
        lines += [f"Nothing changes: all {counts[SAME]} models get the same verdict, victims and domain from both.", ""]
    else:
        lines += [
            f"**{counts[CHANGED]}** verdicts change, **{counts[MOVED]}** placed in another domain, "
            f"{counts[SAME]} the same.",
            "",
            f"| model | {was} | {now} | where / why ({now}) | evicts ({now}) | likely cause |",
            "|---|---|---|---|---|---|",
        ]
        for m in (m for m in result.models if m.status != SAME):
            causes = "<br>".join(f"{code(c.commit)} ({c.pull})" for c in m.causes) or (
                "the scheduler configuration each release runs" if note else "none of the changes below"
            )
            if m.evicted_for:
                causes = f"evicted for {code(m.evicted_for)}: {causes}"
            before = f"**{ICON[m.running.verdict]}**" + (f" in {code(m.running.domain)}" if m.running.domain else "")
            lines.append(f"| {code(m.model)} | {before} | {verdict_cells(m.target)} | {causes} |")
        lines.append("")
    if result.changes:
        lines += [f"Scheduling changes between {was} and {now} that can move a verdict:", ""]
        for change in result.changes:
            who = " and ".join(sorted(change.behaves & {was, now}))
            lines.append(f"- {code(change.commit)} ({change.pull}), {change.where}: in {who}, {one_line(change.what)}.")
        lines.append("")
    return "\n".join(lines) + "\n"
