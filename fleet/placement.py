"""Which cluster of the fleet can take a model: `fleet whatif --model <m>`.

Each stack that has the model is asked `whatif` on its own cluster (live, or a recorded snapshot
per stack), answered by Volcano's scheduling code with that stack's policy where it is built. The
clusters are ranked as a fleet owner picks one: fits without evicting anyone first, then fits after
evicting the fewest PodGroups of the lowest priority, then waits, then never; among equals, the
one whose queue keeps the most GPUs after it.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.fleet_file import Fleet
from fleet.gates import Target, cluster_command

VERDICT_ORDER = {"fits": 0, "fits-after-eviction": 1, "waits": 2, "never": 3}
NOT_IN_STACK = "not in the stack"
UNANSWERED = "unanswered"


@dataclass
class ClusterAnswer:
    stack: str
    wave: str
    verdict: str
    """A `whatif` verdict, `not in the stack`, or `unanswered` (the command failed: `error`)."""
    victims: list[dict[str, Any]] = field(default_factory=list)
    headroom_gpus: float | None = None
    domain: str | None = None
    reason: str | None = None
    error: str = ""

    def rank_key(self) -> tuple[int, int, int, float, str]:
        order = VERDICT_ORDER.get(self.verdict, len(VERDICT_ORDER))
        highest = max((int(v["priority"]) for v in self.victims), default=0)
        return (order, len(self.victims), highest, -(self.headroom_gpus or 0.0), self.stack)

    def as_json(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "wave": self.wave,
            "verdict": self.verdict,
            "victims": self.victims,
            "headroomGpus": self.headroom_gpus,
            "domain": self.domain,
            "reason": self.reason,
            "error": self.error,
        }


def ask(fleet: Fleet, stack: str, model: str, dump: Path | None) -> ClusterAnswer:
    """`whatif --json` of one stack on its cluster (or `dump`), for `model`."""
    target = Target.of(fleet, stack)
    wave = fleet.wave_of(stack)
    document, why = cluster_command("whatif", target, ["--from", str(dump)] if dump is not None else None)
    if document is None:
        return ClusterAnswer(stack, wave, UNANSWERED, error=why)
    found = [m for m in document["models"] if m["model"] == model]
    if not found:
        return ClusterAnswer(stack, wave, NOT_IN_STACK)
    row = found[0]
    return ClusterAnswer(stack, wave, row["verdict"], row["victims"], row["headroomGpus"], row["domain"], row["reason"])


def rank(answers: list[ClusterAnswer]) -> list[ClusterAnswer]:
    return sorted(answers, key=ClusterAnswer.rank_key)


def place(fleet: Fleet, model: str, dumps: dict[str, Path]) -> list[ClusterAnswer]:
    """Every stack of the fleet asked at once (two at a time), ranked."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(lambda stack: ask(fleet, stack, model, dumps.get(stack)), fleet.stacks))
    return rank(answers)


def _victims(answer: ClusterAnswer) -> str:
    if not answer.victims:
        return "-"
    named = ", ".join(f"{v['namespace']}/{v['podGroup']} (priority {v['priority']})" for v in answer.victims[:3])
    return named + (f" and {len(answer.victims) - 3} more" if len(answer.victims) > 3 else "")


def markdown(model: str, answers: list[ClusterAnswer]) -> str:
    lines = [
        f"## Which cluster can take `{model}`",
        "",
        "| rank | stack | wave | verdict | evicts | GPUs left in its queue | where, or why not |",
        "|---|---|---|---|---|---|---|",
    ]
    for index, a in enumerate(answers, 1):
        headroom = f"{a.headroom_gpus:g}" if a.headroom_gpus is not None else "-"
        where = a.domain if a.verdict in ("fits", "fits-after-eviction") else (a.reason or a.error or "-")
        lines.append(f"| {index} | {a.stack} | {a.wave} | {a.verdict} | {_victims(a)} | {headroom} | {where or '-'} |")
    return "\n".join(lines) + "\n"


def as_json(model: str, answers: list[ClusterAnswer]) -> str:
    return json.dumps({"schemaVersion": 1, "model": model, "clusters": [a.as_json() for a in answers]}, indent=2) + "\n"
