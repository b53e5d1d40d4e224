"""The what-if on a cluster recorded from a real API server, where Volcano's own controller named
the PodGroups (`podgroup-<ReplicaSet uid>`, one per ReplicaSet, minMember 1) and the scheduler ran
the stack's policy: `dev-full-recorded.json`, the dev cluster full, and the pull request of
`dev-full-candidate.yaml` adding a model at p1-high. The end-to-end test
(`tests/e2e/test_pull_request.py`) applied that change for real: Volcano's scheduler evicted the
`low` model's pod (p3-low) for `urgent`, the only pod of lower priority.

Found by that test: the what-if's world renamed a running model's PodGroup after the model while
its pods still named Volcano's, so Volcano's code saw pods without a PodGroup and no victim.
"""

from __future__ import annotations

from typing import Any

import pytest

from live.cluster_state import read_file
from offline.render import render_stack
from tests.conftest import PROJECT_DIR
from tests.whatif.test_volcano_engine import volcano_engine
from whatif.predict import predict
from whatif.volcano.predict import predict_with_volcano
from whatif.workload import build_world

pytestmark = pytest.mark.slow  # renders a stack
DUMPS = PROJECT_DIR / "tests" / "fixtures" / "cluster" / "whatif"
STEADY_GROUP = "podgroup-e2cdaac7-eed0-423e-8234-2bc831e71060"
LOW_GROUP = "podgroup-57885256-4e8a-4f2f-ae0d-b5b7c9bb767b"


@pytest.fixture(scope="module")
def candidate() -> Any:
    return render_stack(PROJECT_DIR, "dev", DUMPS / "dev-full-candidate.yaml")


def test_running_pods_keep_the_podgroup_volcanos_controller_named(candidate: Any) -> None:
    state = read_file(DUMPS / "dev-full-recorded.json")
    _, models, objects = build_world(state, candidate.spec, candidate.rendered)
    groups = {uid.split("/", 1)[1] for uid in objects.pod_groups}
    assert {STEADY_GROUP, LOW_GROUP} <= groups
    for pod in objects.pods.values():
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] in groups, pod["metadata"]["name"]
    assert models["steady"].jobs == [f"team-a/{STEADY_GROUP}"]


def victims(prediction: Any) -> dict[str, set[str]]:
    return {v.model: {x.pod_group for x in v.victims} for v in prediction.verdicts}


def test_the_model_names_the_victims_the_real_scheduler_evicted(candidate: Any) -> None:
    prediction = predict(read_file(DUMPS / "dev-full-recorded.json"), candidate.spec, candidate.rendered)
    assert victims(prediction) == {"urgent": {LOW_GROUP}, "steady": set(), "low": set()}


def test_volcanos_code_names_the_victims_the_real_scheduler_evicted(candidate: Any) -> None:
    volcano_engine()
    prediction = predict_with_volcano(read_file(DUMPS / "dev-full-recorded.json"), candidate.spec, candidate.rendered)
    assert victims(prediction) == {"urgent": {LOW_GROUP}, "steady": set(), "low": set()}
    assert {v.model: v.verdict for v in prediction.verdicts}["urgent"] == "fits-after-eviction"
