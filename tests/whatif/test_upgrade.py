"""`whatif --upgrade`: the same recorded cluster answered by Volcano v1.14.1's, v1.15.0's and v1.15.1's
own scheduling code, each built from its release's Go module.

- The recorded dev cluster (`dev-full-recorded.json`): its two PodGroups were recorded `Inqueue`
  while their pods run. v1.14.1 counts their whole `minResources` again in the queue's share
  (`buildQueueAttrs`, fixed in v1.15.0 by 0b82db775), so it does not admit the new `urgent` model,
  which then neither starts nor preempts; v1.15.x admits it and it preempts `low`.
- `aicloud-a-inqueue.yaml` (the example cluster's scheduler image is v1.15.0): tenanta's admitted
  gang waits for a pool and holds the rest of the queue's capability. v1.15.0 counts its GPUs in
  whole units (`GetInqueueResource`, fixed in v1.15.1 by e945225f3) and admits the stack's models.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from cli.main import main
from live.cluster_state import ClusterState, read_file, state_from_objects
from offline.render import render_stack
from tests.conftest import PROJECT_DIR, write_stack
from whatif.predict import EVICTS, FITS, WAITS
from whatif.volcano.build import RELEASES, EngineUnavailableError, ensure_built
from whatif.volcano.predict import predict_with_volcano
from whatif.volcano.release_changes import changes_between
from whatif.volcano.releases import Upgrade, UpgradeError, parse_upgrade, running_release
from whatif.volcano.upgrade import CHANGED, SAME, UpgradePrediction, compare

DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
CLUSTERS = PROJECT_DIR / "tests" / "fixtures" / "cluster"
LOW_GROUP = "team-a/podgroup-57885256-4e8a-4f2f-ae0d-b5b7c9bb767b"


def release_engines() -> None:
    """Every release's build; skipped without Go locally, a failure in CI."""
    try:
        for release in RELEASES:
            ensure_built(release=release)
    except EngineUnavailableError as why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the Volcano releases cannot be built: {why}")
        pytest.skip(f"the Volcano releases cannot be built here: {why}")


def dev_candidate(tmp_path: Path) -> Path:
    """The stack of the recorded dev cluster with the model it adds (`urgent`)."""
    raw = yaml.safe_load((DUMPS / "dev-full-candidate.yaml").read_text())["config"]
    return write_stack(tmp_path / "Pulumi.dev.yaml", {key.split(":", 1)[1]: value for key, value in raw.items()})


def upgrade(render: Any, state: ClusterState, text: str) -> UpgradePrediction:
    asked = parse_upgrade(text, state)
    running, target = (
        predict_with_volcano(state, render.spec, render.rendered, release=r) for r in (asked.running, asked.target)
    )
    return compare(asked, running, target, render.spec)


def scheduler(tag: str, name: str = "volcano-scheduler") -> dict[str, Any]:
    container = {"name": "volcano-scheduler", "image": f"registry.local:5000/volcanosh/vc-scheduler{tag}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "volcano-system"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


# The release the cluster runs, read from its scheduler's image.


def test_the_running_release_is_the_scheduler_images_tag() -> None:
    assert running_release(read_file(CLUSTERS / "aicloud-a-handbuilt.yaml")) == (
        "v1.15.0",
        "image 10.8.17.100:60066/volcanosh/vc-scheduler:v1.15.0 of Deployment volcano-system/volcano-scheduler",
    )
    pinned = state_from_objects([scheduler(":v1.14.1@sha256:" + "0" * 64)], "test")
    assert running_release(pinned)[0] == "v1.14.1"
    assert parse_upgrade("volcano=1.15.1", pinned) == Upgrade("v1.14.1", "v1.15.1", running_release(pinned)[1])


@pytest.mark.parametrize(
    ("text", "objects", "error"),
    [
        ("volcano=v1.15.1", [scheduler("@sha256:" + "0" * 64)], "cannot tell which Volcano release"),
        ("volcano=v1.15.1", [scheduler(":v1.14.1"), scheduler(":v1.15.0", "other")], "more than one Volcano scheduler"),
        ("volcano=v1.16.0", [scheduler(":v1.15.0")], "no build of Volcano v1.16.0's scheduling code"),
        ("lws=v0.10.0", [scheduler(":v1.15.0")], "as `volcano=<release>`"),
        ("volcano=v1.13.0..v1.15.1", [], "no build of Volcano v1.13.0"),
        ("volcano=v1.14.1..", [], "name both releases"),
    ],
)
def test_an_upgrade_the_what_if_cannot_answer_says_what_to_write(
    text: str, objects: list[dict[str, Any]], error: str
) -> None:
    with pytest.raises(UpgradeError, match=error.replace("(", r"\(").replace("`", ".")):
        parse_upgrade(text, state_from_objects(objects, "test"))


def test_a_cluster_on_a_release_without_a_build_is_told_to_name_the_closest() -> None:
    state = read_file(CLUSTERS / "aicloud-a-volcano-1.13.yaml")
    with pytest.raises(UpgradeError, match=r"runs v1\.13\.0 .* `volcano=<release>\.\.v1\.15\.1`"):
        parse_upgrade("volcano=v1.15.1", state)
    assert parse_upgrade("volcano=v1.14.1..v1.15.1", state).read_from == "the --upgrade argument"


def test_a_change_and_its_fix_read_the_same_in_either_direction() -> None:
    def commits(running: str, target: str) -> set[str]:
        return {change.commit for change in changes_between(running, target)}

    assert "e945225f3" in commits("v1.15.0", "v1.15.1") == commits("v1.15.1", "v1.15.0")
    assert "e945225f3" not in commits("v1.14.1", "v1.15.1")  # a regression of v1.15.0 only
    assert {"0b82db775", "f28e22fbc"} <= commits("v1.14.1", "v1.15.0")
    assert commits("v1.15.1", "v1.15.1") == set()


# Each release's own code on the recorded clusters.


@pytest.mark.slow
def test_v1_14_1_holds_back_a_model_v1_15_admits_and_says_which_change(tmp_path: Path) -> None:
    release_engines()
    render = render_stack(PROJECT_DIR, "dev", dev_candidate(tmp_path))
    result = upgrade(render, read_file(DUMPS / "dev-full-recorded.json"), "volcano=v1.14.1..v1.15.1")
    rows = {m.model: m for m in result.models}
    urgent, low = rows["urgent"], rows["low"]
    assert (urgent.status, urgent.running.verdict, urgent.target.verdict) == (CHANGED, WAITS, EVICTS)
    assert (urgent.running.admitted, urgent.target.admitted) == (False, True)
    assert [c.commit for c in urgent.causes] == ["0b82db775"]
    assert [f"{v.namespace}/{v.pod_group}" for v in urgent.target.victims] == [LOW_GROUP]
    assert (low.running.verdict, low.target.verdict, low.evicted_for) == (FITS, WAITS, "urgent")
    assert rows["steady"].status == SAME
    assert not result.unchanged and not result.running.policy_refused

    back = upgrade(render, read_file(DUMPS / "dev-full-recorded.json"), "volcano=v1.15.1..v1.14.1")
    assert [(m.model, m.running.verdict, m.target.verdict) for m in back.models if m.status == CHANGED] == [
        ("low", WAITS, FITS),
        ("urgent", EVICTS, WAITS),
    ]
    assert [c.commit for c in next(m for m in back.models if m.model == "urgent").causes] == ["0b82db775"]


@pytest.mark.slow
def test_where_two_releases_decide_alike_it_says_nothing_changes(tmp_path: Path) -> None:
    release_engines()
    render = render_stack(PROJECT_DIR, "dev", dev_candidate(tmp_path))
    result = upgrade(render, read_file(DUMPS / "dev-full-recorded.json"), "volcano=v1.15.0..v1.15.1")
    assert result.unchanged and all(m.status == SAME and not m.causes for m in result.models)


@pytest.mark.slow
def test_the_cli_reads_v1_15_0_from_the_cluster_and_shows_its_inqueue_regression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    release_engines()
    common = ["--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-inqueue.yaml")]
    assert main(["whatif", *common, "--upgrade", "volcano=v1.15.1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    schemas = {n: json.loads((PROJECT_DIR / "schema" / n).read_text()) for n in ("whatif.schema.json",)}
    upgrade_schema = json.loads((PROJECT_DIR / "schema" / "whatif-upgrade.schema.json").read_text())
    registry = Registry().with_resources((n, Resource.from_contents(s)) for n, s in schemas.items())
    jsonschema.Draft202012Validator(upgrade_schema, registry=registry).validate(data)
    assert data["running"]["release"] == "v1.15.0" and "vc-scheduler:v1.15.0" in data["running"]["readFrom"]
    for model in data["models"]:
        assert (model["running"]["verdict"], model["target"]["verdict"]) == (FITS, WAITS)
        assert (model["running"]["admitted"], model["target"]["admitted"]) == (True, False)
        assert model["causes"] == ["e945225f3"]
        assert "64 held by admitted PodGroups whose pods wait" in model["target"]["reason"]
        assert "tenants.tenanta.queue.capability" in model["target"]["reason"]

    assert main(["whatif", *common, "--upgrade", "volcano=v1.15.1..v1.15.0"]) == 1
    out = capsys.readouterr().out
    assert "### If Volcano v1.15.1 becomes v1.15.0: stack `aicloud-a`" in out
    assert "| `qwen8b-preemptor` | **waits** | **fits** | domain" in out and "`e945225f3` (#5499) |" in out


@pytest.mark.slow
def test_a_release_that_cannot_read_the_stacks_policy_runs_its_default_one(capsys: pytest.CaptureFixture[str]) -> None:
    """aicloud-a's policy lists `gangpreempt`, which v1.14.1 does not have: its binary keeps its default
    configuration (no preempt), so the models that preempt on v1.15.1 wait there."""
    release_engines()
    common = ["--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-preempt.yaml")]
    assert main(["whatif", *common, "--upgrade", "volcano=v1.14.1..v1.15.1", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["policyRefused"] == {"v1.14.1": "failed to find Action  gangpreempt"}
    assert {(m["running"]["verdict"], m["target"]["verdict"], tuple(m["causes"])) for m in data["models"]} == {
        (WAITS, EVICTS, ())
    }


def test_the_upgrade_is_refused_with_the_model_or_a_loss(capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--stack", "aicloud-a", "--from", str(DUMPS / "aicloud-a-inqueue.yaml"), "--upgrade"]
    assert main(["whatif", *common, "volcano=v1.15.1", "--engine", "model"]) == 2
    assert "leave out `--engine model`" in capsys.readouterr().err
    assert main(["whatif", *common, "volcano=v1.15.1", "--lose", "node=gpu-worker-1"]) == 2
    assert "ask one at a time" in capsys.readouterr().err
    assert main(["whatif", *common, "volcano=v9"]) == 2
    assert "no build of Volcano v9's scheduling code" in capsys.readouterr().err
