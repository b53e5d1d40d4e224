"""The model and Volcano's own code on the same snapshot, side by side.

Both get the same objects and the same scheduler configuration, read the binary's way (every
plugin flag left out is on) and run cycles until nothing changes. They agree when every PodGroup
ends with the same number of pods placed and the same number of pods evicted from it; where
Volcano breaks a tie at random, any of the outcomes its repeats produced will do. Pods of one
PodGroup are interchangeable here, which is the level the what-if reports at (a verdict per model,
victims per PodGroup).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from components.kubernetes.yaml_text import dump
from config.upstream.volcano import GROUP_NAME_ANNOTATION
from live.cluster_state import ClusterState, state_from_objects
from whatif.predict import MAX_CYCLES, simulate
from whatif.scheduler.model import BINDING, RUNNING
from whatif.snapshot import snapshot_session

PLACED = (RUNNING, BINDING, "Bound")


@dataclass(frozen=True)
class Result:
    placed: tuple[tuple[str, int], ...]
    """(PodGroup, pods placed) for every PodGroup, sorted."""
    evicted: tuple[tuple[str, int], ...]
    """(PodGroup, its pods evicted in any cycle, each counted once) where any were, sorted."""

    def describe(self) -> str:
        placed = ", ".join(f"{g}={n}" for g, n in self.placed)
        evicted = ", ".join(f"{g}={n}" for g, n in self.evicted) or "none"
        return f"placed {placed}; evicted {evicted}"


@dataclass
class Comparison:
    model: Result
    volcano: list[Result] = field(default_factory=list)
    error: str = ""

    @property
    def agrees(self) -> bool:
        return not self.error and self.model in self.volcano


def _groups(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Pod (namespace/name) -> PodGroup (namespace/name)."""
    out = {}
    for obj in objects:
        if obj.get("kind") == "Pod":
            metadata = obj["metadata"]
            group = (metadata.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
            if group:
                namespace = metadata.get("namespace", "default")
                out[f"{namespace}/{metadata['name']}"] = f"{namespace}/{group}"
    return out


def _result(placed: Counter[str], evicted: Counter[str], groups: list[str]) -> Result:
    return Result(
        tuple(sorted((g, placed.get(g, 0)) for g in groups)),
        tuple(sorted((g, n) for g, n in evicted.items() if n)),
    )


def _pod_groups(objects: list[dict[str, Any]]) -> list[str]:
    return [
        f"{o['metadata'].get('namespace', 'default')}/{o['metadata']['name']}"
        for o in objects
        if o.get("kind") == "PodGroup"
    ]


def model_result(objects: list[dict[str, Any]], conf: dict[str, Any], state: ClusterState | None = None) -> Result:
    """The model's result; `state`: the objects as a cluster state already read (with the groups
    being made again, whose pods Volcano's code gets as the case's `arrivals`)."""
    session = snapshot_session(state or state_from_objects(objects, "differential"))
    tiers = [list(t["plugins"]) for t in conf["tiers"]]
    actions = tuple(a.strip() for a in str(conf["actions"]).split(",") if a.strip())
    session.configurations = {str(c["name"]): dict(c.get("arguments") or {}) for c in conf.get("configurations") or []}
    evicted_tasks = simulate(session, tiers, actions)
    placed: Counter[str] = Counter()
    owner: dict[str, str] = {}
    for job in session.jobs.values():
        for task in job.tasks:
            owner[task.uid] = job.uid
            if task.status in PLACED:
                placed[job.uid] += 1
    evicted = Counter(owner[uid] for uid in evicted_tasks if uid in owner)
    return _result(placed, evicted, _pod_groups(objects))


def volcano_case(case_id: str, objects: list[dict[str, Any]], conf: dict[str, Any], repeat: int) -> dict[str, Any]:
    return {
        "id": case_id,
        "conf": dump(conf),
        "defaults": True,
        "objects": objects,
        "cycles": MAX_CYCLES,
        "repeat": repeat,
    }


def volcano_results(objects: list[dict[str, Any]], answer: dict[str, Any]) -> list[Result]:
    groups = _groups(objects)
    names = _pod_groups(objects)
    results = []
    for outcome in answer.get("outcomes") or []:
        placed = Counter(groups[pod] for pod, node in outcome["pods"].items() if node and pod in groups)
        # each pod once, however many cycles evicted it, as the model's `simulate` records them
        evicted = Counter(groups[pod] for pod in set(outcome["evicted"]) if pod in groups)
        results.append(_result(placed, evicted, names))
    return results
