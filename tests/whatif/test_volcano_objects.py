"""The objects the Volcano engine is given for a stack on a dump: what the scheduler itself would
create, and what the dump cannot say. Plain data, no Go needed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from live.cluster_state import ClusterState
from offline.render import StackRender
from whatif.volcano.predict import queue_objects, with_uid, without_claims
from whatif.workload import _admitted


def test_the_schedulers_own_queues_are_there(committed_render: Callable[[str], StackRender]) -> None:
    """The scheduler creates `root` (not reclaimable) and `default` at start; without `root` the
    capacity plugin finds no parent for a hierarchy and admits nothing."""
    queues = {q["metadata"]["name"]: q for q in queue_objects(ClusterState(), committed_render("aicloud-a").rendered)}
    assert queues["root"]["spec"]["reclaimable"] is False and queues["default"]["spec"]["reclaimable"] is True
    assert all(q["status"]["state"] == "Open" for q in queues.values())
    kept = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "root"}}
    queues = {
        q["metadata"]["name"]: q for q in queue_objects(ClusterState(queues=[kept]), committed_render("dev").rendered)
    }
    assert queues["root"] is kept


def test_volume_claims_are_left_out_and_nothing_else() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "volumes": [
                {"name": "model", "persistentVolumeClaim": {"claimName": "models"}},
                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}},
            ]
        },
    }
    assert [v["name"] for v in without_claims(pod)["spec"]["volumes"]] == ["dshm"]
    plain = {"metadata": {"name": "q"}, "spec": {"volumes": [{"name": "dshm", "emptyDir": {}}]}}
    assert without_claims(plain) is plain


def test_a_new_pod_is_admitted_as_the_api_server_would() -> None:
    pod = {"metadata": {"name": "m-new-0", "namespace": "a01"}, "spec": {"priorityClassName": "p0"}}
    admitted = _admitted(pod, "a01/podgroup-m", {"p0": 1000}, 0)
    assert admitted["spec"]["priority"] == 1000 and admitted["kind"] == "Pod"
    assert admitted["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "podgroup-m"
    assert "/" not in admitted["metadata"]["uid"], "Volcano keys tasks by namespace/name/uid"


def test_a_pod_without_a_uid_gets_one_and_others_keep_theirs() -> None:
    """Volcano keys pods by UID: pods of a hand-written dump without one would be one pod to it."""
    bare = {"metadata": {"name": "p", "namespace": "a01"}}
    assert with_uid(bare)["metadata"]["uid"] == "a01-p"
    named = {"metadata": {"name": "p", "namespace": "a01", "uid": "6f1c"}}
    assert with_uid(named) is named


def test_an_engine_that_cannot_answer_leaves_the_answer_to_the_model(
    monkeypatch: Any, capsys: Any, tmp_path: Path
) -> None:
    """`auto` says so and lets the model answer; `--engine volcano` is an internal error (exit 3)."""
    import json

    import whatif.volcano.build
    import whatif.volcano.predict
    from cli.main import main
    from tests.conftest import PROJECT_DIR

    built = tmp_path / "volcano-session"
    built.touch()
    monkeypatch.setattr(whatif.volcano.build, "binary_path", lambda *_: built)
    monkeypatch.setattr(whatif.volcano.build, "ensure_built", lambda **_: built)
    monkeypatch.setattr(whatif.volcano.predict, "run_cases", lambda cases, **_: [{"error": "broken"}] * len(cases))
    dump = str(PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif" / "aicloud-a-full-queue.yaml")
    assert main(["whatif", "--stack", "aicloud-a", "--from", dump, "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["engine"] == "model"
    assert "note: the model answers: volcano-session could not answer: broken" in captured.err
    assert main(["whatif", "--stack", "aicloud-a", "--from", dump, "--engine", "volcano"]) == 3
