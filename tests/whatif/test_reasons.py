"""Reasons a person can act on: no internal word, node counts that are true and say why the other
nodes cannot take the pod, and a priority-class hint only where a higher class would change the
answer. On the example cluster's preempt dump, changed the way each case needs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from live.cluster_state import read_file
from offline.render import StackRender
from tests.conftest import PROJECT_DIR
from whatif.predict import WAITS, predict
from whatif.reasons import LAST_WORDS, _last_word
from whatif.scheduler.model import Job
from whatif.scheduler.session import Session

DUMP = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "aicloud-a-preempt.yaml"
BIG = "qwen2-72b-tenanta"


TOP = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "top"}, "value": 2_000_000}


def _changed(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = yaml.safe_load(DUMP.read_text())
    data["items"].append(TOP)
    for item in data["items"]:
        change(item)
    out = tmp_path / "cluster.yaml"
    out.write_text(yaml.safe_dump(data))
    return out


def _batch(item: dict[str, Any]) -> bool:
    return item["kind"] in ("Pod", "PodGroup") and "batch-" in item["metadata"]["name"]


def _above_the_models(item: dict[str, Any]) -> None:
    """The batch gangs at a priority above every model's."""
    if item["kind"] == "Pod":
        item["spec"]["priority"] = TOP["value"]
        item["spec"]["priorityClassName"] = "top"
    else:
        item["spec"]["priorityClassName"] = "top"


def _verdict(render: StackRender, dump: Path) -> Any:
    return next(v for v in predict(read_file(dump), render.spec, render.rendered).verdicts if v.model == BIG)


def test_no_priority_hint_where_the_running_work_may_not_be_preempted(
    committed_render: Callable[[str], StackRender], tmp_path: Path
) -> None:
    def unpreemptable(item: dict[str, Any]) -> None:
        if _batch(item):
            _above_the_models(item)
            if item["kind"] == "Pod":
                item["metadata"]["annotations"]["volcano.sh/preemptable"] = "false"

    verdict = _verdict(committed_render("aicloud-a"), _changed(tmp_path, unpreemptable))
    assert verdict.verdict == WAITS
    assert "cannot preempt the running gangs" in verdict.reason
    assert "priorityClass" not in verdict.reason and "tenants.tenanta.queue.deserved" in verdict.reason


def test_a_priority_hint_where_a_higher_class_would_preempt(
    committed_render: Callable[[str], StackRender], tmp_path: Path
) -> None:
    def above(item: dict[str, Any]) -> None:
        if _batch(item):
            _above_the_models(item)

    verdict = _verdict(committed_render("aicloud-a"), _changed(tmp_path, above))
    assert verdict.verdict == WAITS
    assert f"models.{BIG}.priorityClass" in verdict.reason


def test_nodes_that_cannot_take_the_pod_say_why(committed_render: Callable[[str], StackRender], tmp_path: Path) -> None:
    """Cordoned nodes are counted apart from busy ones, so "0 nodes have 8 free GPUs" is never said
    of a cluster whose free nodes are only cordoned."""

    def cordon_and_keep(item: dict[str, Any]) -> None:
        if _batch(item):
            _above_the_models(item)
        if item["kind"] == "Node" and item["metadata"]["name"] in ("gpu-worker-1", "gpu-worker-2"):
            item.setdefault("spec", {})["unschedulable"] = True

    verdict = _verdict(committed_render("aicloud-a"), _changed(tmp_path, cordon_and_keep))
    assert verdict.verdict == WAITS
    assert "cordoned" in verdict.reason


def test_the_schedulers_own_words_become_sentences() -> None:
    session = Session({}, {}, {}, {})
    job = Job("a01/pg", "tenanta", 1, "Pending")

    class Model:
        name = BIG

    for word in LAST_WORDS:
        session.unschedulable = {job.uid: word}
        reason = _last_word(session, job, Model(), "tenants.tenanta.queue")  # type: ignore[arg-type]
        assert reason.text != word and len(reason.text.split()) > 5
        assert reason.key.startswith(("tenants.", "models."))
    # The gang plugin's message (plugins/gang/gang.go) around the job's fit error (api/job_info.go).
    volcano = (
        "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
        "Pending: 1 Schedulable, 1 Unschedulable"
    )
    session.unschedulable = {job.uid: volcano}
    reason = _last_word(session, job, Model(), "tenants.tenanta.queue")  # type: ignore[arg-type]
    assert reason.text == (
        "2 of its 2 pods cannot be placed at once (1 would fit once the whole gang does; 1 found no node with room)"
    )
    assert reason.key == f"models.{BIG}.resources" and reason.volcano == volcano
    # A message of another form is quoted, as Volcano wrote it.
    session.unschedulable = {job.uid: "queue is closed"}
    reason = _last_word(session, job, Model(), "tenants.tenanta.queue")  # type: ignore[arg-type]
    assert reason.text == "Volcano says: `queue is closed`" and reason.volcano == "queue is closed"
