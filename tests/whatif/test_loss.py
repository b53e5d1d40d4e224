"""`whatif --lose`: the recorded dev cluster (four nodes of two GPUs, full: `steady` three pods at
p1-high, `low` one pod at p3-low) losing a node, a domain or GPUs, answered by both engines. What
the real cluster does with the same losses is `tests/e2e/test_whatif_lose_real.py`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from cli.main import main
from live.cluster_state import ClusterState, read_file
from offline.render import StackRender
from tests.conftest import PROJECT_DIR, write_stack
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.loss import LossError, after_loss, parse_loss
from whatif.loss_report import EVICTED, PENDING, PLACED_AGAIN, RUNNING, LossPrediction, compare
from whatif.predict import predict
from whatif.volcano.predict import predict_with_volcano

pytestmark = pytest.mark.slow  # renders a stack
DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
RECORDED = DUMPS / "dev-full-recorded.json"
SCHEMAS = ("whatif-lose.schema.json", "whatif.schema.json")
LOW_GROUP = "podgroup-57885256-4e8a-4f2f-ae0d-b5b7c9bb767b"


def as_running(guarantee: int | None = None) -> dict[str, Any]:
    """The stack the recorded cluster runs: the candidate without the model it adds."""
    raw = yaml.safe_load((DUMPS / "dev-full-candidate.yaml").read_text())["config"]
    raw = {key.split(":", 1)[1]: value for key, value in raw.items()}
    del raw["models"]["urgent"]
    if guarantee is not None:
        raw["tenants"]["team-a"]["queue"]["guarantee"] = {"nvidia.com/gpu": guarantee}
    return raw


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from offline.render import render_stack

    path = write_stack(tmp_path_factory.mktemp("loss") / "Pulumi.dev.yaml", as_running())
    return render_stack(PROJECT_DIR, "dev", path)


def answer(render: Any, losses: list[str], engine: str = "model") -> LossPrediction:
    state = read_file(RECORDED)
    lost_state, lost = after_loss(state, render.spec, render.rendered, [parse_loss(text) for text in losses])
    predictor = predict if engine == "model" else predict_with_volcano
    if engine == "volcano":
        volcano_engine()
    before = predictor(state, render.spec, render.rendered)
    return compare(before, predictor(lost_state, render.spec, render.rendered), lost, render.spec)


def statuses(result: LossPrediction) -> dict[str, str]:
    return {m.model: m.status for m in result.models}


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_a_lost_node_under_the_high_model_is_placed_again_by_evicting_the_low_one(running: Any, engine: str) -> None:
    result = answer(running, ["node=dev-gpu-1"], engine)
    assert statuses(result) == {"steady": PLACED_AGAIN, "low": EVICTED}
    steady = next(m for m in result.models if m.model == "steady")
    assert steady.pods_lost == 1
    assert [v.pod_group for v in steady.after.victims] == [LOW_GROUP]
    assert not result.unharmed


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_a_lost_node_under_the_low_model_leaves_it_pending(running: Any, engine: str) -> None:
    result = answer(running, ["node=dev-gpu-2"], engine)
    assert statuses(result) == {"steady": RUNNING, "low": PENDING}
    low = next(m for m in result.models if m.model == "low")
    assert low.pods_lost == 1 and low.after.verdict == "waits"


@pytest.mark.parametrize("engine", ["model", "volcano"])
def test_lost_gpus_leave_running_pods_running(running: Any, engine: str) -> None:
    result = answer(running, ["gpus=2@dev-gpu-2"], engine)
    assert result.lost.gpus == {"dev-gpu-2": 2}
    assert statuses(result) == {"steady": RUNNING, "low": RUNNING}
    assert result.unharmed


def test_a_lost_domain_takes_every_node_and_nothing_runs(running: Any) -> None:
    result = answer(running, ["domain=leaf-a"])
    assert result.lost.nodes == [f"dev-gpu-{n}" for n in range(1, 5)]
    assert statuses(result) == {"steady": PENDING, "low": PENDING}
    assert {m.after.verdict for m in result.models} == {"never"}


def test_a_guarantee_breaks_when_its_work_waits_below_it(render_raw: Callable[..., StackRender]) -> None:
    render = render_raw(as_running(guarantee=8), stack="dev")
    broken = answer(render, ["node=dev-gpu-2"]).tenants
    assert [(t.tenant, t.guarantee, t.held, t.waiting, t.holds) for t in broken] == [
        ("team-a", 8.0, 6.0, ["low"], False)
    ]
    kept = answer(render, ["gpus=1@dev-gpu-3"]).tenants
    assert [t.holds for t in kept] == [True]


def _pod(name: str, node: str, labels: dict[str, str], owned: bool = True) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "batch", "uid": name, "labels": labels}
    if owned:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
    return {"metadata": metadata, "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def test_a_group_that_lost_a_pod_is_made_again_whole_and_bare_pods_are_gone(running: Any) -> None:
    group = {"leaderworkerset.sigs.k8s.io/name": "big", "leaderworkerset.sigs.k8s.io/group-index": "0"}
    pods = [
        _pod("big-0", "dev-gpu-3", group),
        _pod("big-0-1", "dev-gpu-1", group),
        _pod("job-a", "dev-gpu-1", {"app": "job"}),
        _pod("bare", "dev-gpu-1", {}, owned=False),
        _pod("elsewhere", "dev-gpu-4", {"app": "job"}),
    ]
    nodes = [{"metadata": {"name": f"dev-gpu-{n}", "labels": {}}, "status": {"allocatable": {}}} for n in (1, 3, 4)]
    state = ClusterState(nodes=nodes, pods=pods)
    after, lost = after_loss(state, running.spec, running.rendered, [parse_loss("node=dev-gpu-1")])
    by_name = {p["metadata"]["name"]: p for p in after.pods}
    assert sorted(by_name) == ["big-0-1-again", "big-0-again", "elsewhere", "job-a-again"]
    assert by_name["big-0-again"]["status"] == {"phase": "Pending"} and "nodeName" not in by_name["big-0-again"]["spec"]
    assert sorted(lost.other_pods) == ["batch/bare", "batch/big-0", "batch/big-0-1", "batch/job-a"]
    assert [n["metadata"]["name"] for n in after.nodes] == ["dev-gpu-3", "dev-gpu-4"]
    assert after.restarting_groups == {("batch", "big", "0")}  # its pods arrive later (`test_arrivals.py`)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("bogus", "write `node=<name>"),
        ("gpus=0@dev-gpu-1", "write `node=<name>"),
        ("node=dev-gpu-9", "no node 'dev-gpu-9'; did you mean 'dev-gpu-"),
        ("domain=leaf-b", "no HyperNode is named 'leaf-b'; did you mean 'leaf-a'?"),
        ("gpus=3@dev-gpu-1", "has 2 nvidia.com/gpu, fewer than 3"),
        ("gpus=1@rack-9", "no node and the stack no pool named 'rack-9'"),
    ],
)
def test_a_loss_naming_nothing_the_cluster_has_is_refused(running: Any, text: str, error: str) -> None:
    with pytest.raises(LossError, match=error.replace("?", r"\?").replace("(", r"\(")):
        answer(running, [text])


def test_the_cli_answers_as_json_with_exit_1_and_refuses_a_bad_loss_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = write_stack(tmp_path / "Pulumi.dev.yaml", as_running())
    common = ["--stack", "dev", "--config-file", str(stack_file), "--from", str(RECORDED), "--engine", "model"]
    assert main(["whatif", *common, "--lose", "node=dev-gpu-1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    schemas = {name: json.loads((PROJECT_DIR / "schema" / name).read_text()) for name in SCHEMAS}
    registry = (
        Registry()
        .with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
        .with_resources((name, Resource.from_contents(schema)) for name, schema in schemas.items())
    )
    jsonschema.Draft202012Validator(schemas["whatif-lose.schema.json"], registry=registry).validate(data)
    assert data["lost"]["nodes"] == ["dev-gpu-1"]
    assert {m["model"]: m["status"] for m in data["models"]} == {"low": "evicted", "steady": "placed-again"}
    assert main(["whatif", *common, "--lose", "gpus=1@dev-gpu-3"]) == 0
    out = capsys.readouterr().out
    assert "If `gpus=1@dev-gpu-3` is lost" in out and "| `steady` | still running | 0 |" in out
    assert main(["explain", "low", *common, "--lose", "node=dev-gpu-2"]) == 1
    assert "`low` is Pending (1 of its pods were on what is lost): waits" in capsys.readouterr().out
    assert main(["whatif", *common, "--lose", "node=dev-gpu-9"]) == 2
    assert "error: --lose node=dev-gpu-9: the cluster has no node 'dev-gpu-9'" in capsys.readouterr().err


def test_a_model_keeps_serving_a_node_loss_when_no_node_holds_every_replica() -> None:
    from whatif.predict import Verdict
    from whatif.report import survives_one_node

    verdicts = [
        Verdict("apart", "fits", replicas=[["n1"], ["n2"]]),
        Verdict("stacked", "fits", replicas=[["n1"], ["n1"]]),
        Verdict("groups", "fits-after-eviction", replicas=[["n1", "n2"], ["n2", "n3"]]),
        Verdict("waiting", "waits"),
    ]
    assert survives_one_node(verdicts) == [
        "Keeps serving when any one node is lost: `apart` yes; `stacked` **no** (every replica on `n1`); "
        "`groups` **no** (every replica on `n2`).",
        "",
    ]


def test_gpus_of_a_node_whose_count_is_no_quantity_are_refused_as_bad_input(running: Any) -> None:
    node = {"metadata": {"name": "odd", "labels": {}}, "status": {"allocatable": {"nvidia.com/gpu": "eight"}}}
    with pytest.raises(LossError, match=re.escape("odd has 0 nvidia.com/gpu, fewer than 1")):
        after_loss(ClusterState(nodes=[node]), running.spec, running.rendered, [parse_loss("gpus=1@odd")])


def test_a_group_made_again_that_races_with_waiting_work_shows_both_outcomes(running: Any) -> None:
    """Work waiting for a restarted group's room is placed first unless LWS is back before the next
    cycle; where the two orders answer differently, a model carries the other answer (`otherwise`)."""
    from whatif.loss import Loss, Lost
    from whatif.loss_report import as_json, markdown
    from whatif.predict import Prediction, Verdict

    def prediction(*verdicts: Verdict) -> Prediction:
        return Prediction("dev", "test", "actions", list(verdicts), [], [])

    lost = Lost([Loss("node", ("dev-gpu-1",))], nodes=["dev-gpu-1"], pods={"steady": ["steady-0"]})
    lost.running = {"steady", "low"}
    before = prediction(Verdict("steady", "fits"), Verdict("low", "waits"))
    held_back = prediction(Verdict("steady", "waits", reason="queue full"), Verdict("low", "fits"))
    at_once = prediction(Verdict("steady", "fits"), Verdict("low", "waits"))
    raced = compare(before, held_back, lost, running.spec, at_once)
    assert {m.model: (m.after.verdict, m.otherwise and m.otherwise.verdict) for m in raced.models} == {
        "steady": ("waits", "fits"),
        "low": ("fits", "waits"),
    }
    assert not raced.unharmed
    rows = {row["model"]: row for row in json.loads(as_json(raced))["models"]}
    assert rows["steady"]["otherwise"] == {"verdict": "fits", "victims": [], "reason": None}
    assert "Pending (or **fits** if the groups made again are back first)" in markdown(raced)

    alike = compare(before, held_back, lost, running.spec, held_back)
    assert all(m.otherwise is None for m in alike.models) and "back first" not in markdown(alike)
