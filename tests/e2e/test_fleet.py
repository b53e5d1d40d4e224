"""A fleet of three clusters for real: `volcano-platform fleet` rolls three stacks out in two waves
through Pulumi's Automation API and the real CLI, each cluster its own API server, KWOK nodes,
Volcano and LWS.

In order, on the same clusters: with every gate passing, all three stacks converge and a following
`fleet preview` finds nothing to change; with a node of the wave-1 cluster gone (a preflight
error), `fleet up` stops before wave 2, whose stack keeps its last update although its file
changed; with a gang the wave-1 cluster cannot place as it is (the stack alone fits, but a pod
made by hand holds a GPU the gang needs), the what-if says it waits, `up` fails and the gate
after it names the PodGroup Volcano left Pending, with the scheduler's reason (a plain `pulumi up`
of such a stack fails as well: `test_unfit_model.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR, TOOL
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config
from tests.e2e.test_unfit_model import with_wide_model

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
WAVES = {"lab": ["fleet-lab"], "prod": ["fleet-eu", "fleet-us"]}
LAB = "fleet-lab"
ENCRYPTED = "fleet-us"


@pytest.fixture(scope="module")
def clusters(
    tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]
) -> Iterator[dict[str, LocalCluster]]:
    with ExitStack() as stack:
        started = {}
        for name in (s for stacks in WAVES.values() for s in stacks):
            folder = tmp_path_factory.mktemp(f"{name}-cluster")
            started[name] = stack.enter_context(contextmanager(start_cluster)(folder, real_programs, dev_nodes()))
        yield started


@pytest.fixture(scope="module")
def fleet(
    clusters: dict[str, LocalCluster], real_programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The project folder with the three stacks (one backend), and the fleet file beside them."""
    project = tmp_path_factory.mktemp("fleet") / "project"
    stacks = {name: PulumiStack.create(project, name, e2e_config("dev", cluster.kubeconfig), real_programs)
              for name, cluster in clusters.items()}  # fmt: skip
    document = {
        "waves": [
            {"name": "lab", "stacks": WAVES["lab"]},
            {"name": "prod", "stacks": WAVES["prod"], "parallel": 2},
        ],
        "gates": {"protectedTenants": ["team-a"], "overridable": ["whatif"]},
    }
    path = project / "fleet.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    # One stack keeps its cluster's kubeconfig encrypted, as a stack in a shared repository does:
    # the gates must read the cluster `up` writes to, not the ambient one (there is none here).
    stacks[ENCRYPTED].cli("config", "set", "--stack", ENCRYPTED, "--secret", "--path",
                          "volcano-platform:cluster.kubeconfig", str(clusters[ENCRYPTED].kubeconfig))  # fmt: skip
    env = {key: value for key, value in stacks[LAB].env.items() if key != "KUBECONFIG"}
    env["PATH"] = os.pathsep.join([str(real_programs["pulumi"].parent), env["PATH"]])
    # The project's policy pack, through a launcher that notes each start by the CLI.
    policy = project.parent / "bin" / "policy-noting-starts"
    policy.write_text(f'#!/bin/sh\necho started >> "{project.parent / "policy-starts"}"\n'
                      f'exec "{stacks[LAB].policy_pack}" "$@"\n')  # fmt: skip
    policy.chmod(0o755)
    return {"path": path, "stacks": stacks, "env": env, "policy": policy}


def run_fleet(fleet: dict[str, Any], *args: str) -> tuple[int, dict[str, Any], str]:
    command = [*TOOL, "fleet", *args, "--fleet", str(fleet["path"]), "--json"]
    done = subprocess.run(command, cwd=PROJECT_DIR, env=fleet["env"], capture_output=True, text=True, timeout=1800)
    assert done.returncode in (0, 1), done.stderr[-4000:]
    return done.returncode, json.loads(done.stdout), done.stderr


def by_stack(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["stack"]: row for row in report["stacks"]}


def test_every_gate_passing_the_fleet_converges_and_previews_empty(fleet: dict[str, Any]) -> None:
    code, report, progress = run_fleet(fleet, "up", "--policy-pack", str(fleet["policy"]))
    assert code == 0, progress[-4000:]
    starts = (fleet["policy"].parent.parent / "policy-starts").read_text().splitlines()
    assert len(starts) >= 3, "the CLI ran the policy pack with each stack's `up`"
    rows = by_stack(report)
    assert [row["wave"] for row in report["stacks"]] == ["lab", "prod", "prod"]
    for row in rows.values():
        assert row["result"] == "succeeded", row
        assert [g["gate"] for g in row["gates"]] == ["check", "preflight", "whatif", "workloads"], row
        assert all(g["passed"] for g in row["gates"]), row
        assert row["changes"].get("create", 0) > 0, row
    # The gate after `up` read the stack's own model back from the cluster, serving.
    assert "Deployment(s)" in rows[LAB]["gates"][-1]["said"], rows[LAB]
    assert "fleet: lab/fleet-lab: gate whatif passed" in progress

    code, report, progress = run_fleet(fleet, "preview")
    assert code == 0, json.dumps(report, indent=1)[-6000:] + progress[-3000:]
    assert all(row["changes"] == {} and row["step"] == "preview" for row in report["stacks"]), report

    code, status, _ = run_fleet(fleet, "status")
    assert code == 0
    assert {row["stack"]: row["message"] for row in status["stacks"]} == {
        name: f"volcano-platform fleet up, wave {wave}" for wave, names in WAVES.items() for name in names
    }


def test_the_fleet_whatif_ranks_the_clusters_as_their_schedulers_then_place_the_model(
    fleet: dict[str, Any], clusters: dict[str, LocalCluster]
) -> None:
    """A model of two replicas of two GPUs, added to every stack. Beside the stack's one-GPU
    model, pods made by hand hold a GPU of one node of `fleet-us` (two whole nodes or more stay
    free) and of three of `fleet-eu` (one at most); the lab has three. The fleet what-if, live,
    ranks the two that fit before the one where it waits; applied, the model runs where it was
    said to fit and waits where it was said to wait."""
    holders = {"fleet-us": ["dev-gpu-2"], "fleet-eu": ["dev-gpu-1", "dev-gpu-2", "dev-gpu-3"]}
    for name, nodes in holders.items():
        for node in nodes:
            holder = {**GPU_HOLDER, "metadata": {"name": f"holder-{node}", "namespace": "default"}}
            holder["spec"] = {**GPU_HOLDER["spec"], "nodeName": node}
            clusters[name].kubectl("apply", "-f", "-", input=json.dumps(holder))
    for name, stack in fleet["stacks"].items():
        stack.write_config(with_extra_model(clusters[name].kubeconfig))
    code, ranked, _ = run_fleet(fleet, "whatif", "--model", EXTRA)
    assert code == 0
    said = [(c["stack"], c["verdict"]) for c in ranked["clusters"]]
    assert said == [(LAB, "fits"), ("fleet-us", "fits"), ("fleet-eu", "waits")], ranked

    code, report, progress = run_fleet(fleet, "up")
    assert code == 1 and report["stoppedBy"] == "fleet-eu", progress[-4000:]
    for name, verdict in said:
        running = [
            p
            for p in clusters[name].get_json("pods", "-n", "team-a", "-l", f"app.kubernetes.io/instance={EXTRA}")[
                "items"
            ]
            if p["status"].get("phase") == "Running"
        ]
        assert (len(running) == 2) == (verdict == "fits"), (name, verdict, [p["metadata"]["name"] for p in running])


EXTRA = "extra"


def with_extra_model(kubeconfig: Path) -> dict[str, Any]:
    config = e2e_config("dev", kubeconfig)
    model = json.loads(json.dumps(config["models"]["qwen3-0-6b"]))
    model["replicas"] = 2
    model["resources"] = {**model["resources"], "gpus": 2}
    model["engine"] = {**model.get("engine", {}), "tensorParallelSize": 2}
    model["startup"] = {"placeTimeoutSeconds": 30, "loadTimeoutSeconds": 30}
    config["models"][EXTRA] = model
    return config


def test_a_preflight_error_on_wave_one_leaves_wave_two_untouched(
    fleet: dict[str, Any], clusters: dict[str, LocalCluster]
) -> None:
    lab = clusters[LAB]
    eu: PulumiStack = fleet["stacks"]["fleet-eu"]
    changed = e2e_config("dev", clusters["fleet-eu"].kubeconfig)
    changed["models"]["qwen3-0-6b"]["replicas"] = 2
    eu.write_config(changed)
    lab.kubectl("delete", "node", "dev-gpu-4")
    try:
        code, report, _ = run_fleet(fleet, "up")
    finally:
        lab.create_nodes(dev_nodes()[3:])
        lab.wait_for(lambda: _ready_nodes(lab) == 4, 120, "dev-gpu-4 back and Ready")
    assert code == 1
    rows = by_stack(report)
    assert rows[LAB]["result"] == "failed" and rows[LAB]["step"] == "gates", rows[LAB]
    failed = next(g for g in rows[LAB]["gates"] if not g["passed"])
    assert failed["gate"] == "preflight" and "nodes-missing" in failed["said"], failed
    assert report["stoppedBy"] == LAB
    assert rows["fleet-eu"]["result"] == rows["fleet-us"]["result"] == "not started"
    # Wave 2 was never touched: its Deployment still has the one replica the first `up` gave it,
    # and a preview of that stack alone (as a deploy workflow's leg runs it) still has the change.
    deployment = clusters["fleet-eu"].get_json("deployment", "qwen3-0-6b", "-n", "team-a")
    assert deployment["spec"]["replicas"] == 1, deployment["spec"]
    code, report, progress = run_fleet(fleet, "preview", "--stack", "fleet-eu")
    assert code == 0, progress[-4000:]
    assert [(row["stack"], row["wave"]) for row in report["stacks"]] == [("fleet-eu", "prod")]
    # The replicas' update (the test before left its extra model in this stack's state: deleted too).
    assert report["stacks"][0]["changes"].get("update") == 1, report


GPU_HOLDER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "gpu-holder", "namespace": "default"},
    "spec": {
        "nodeName": "dev-gpu-1",
        "containers": [{"name": "hold", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
}


def _ready_nodes(cluster: LocalCluster) -> int:
    nodes = cluster.get_json("nodes")["items"]
    ready = [
        n
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
    ]
    return len(ready)


def test_a_model_the_cluster_cannot_place_fails_the_gate_after_up_with_its_reason(
    fleet: dict[str, Any], clusters: dict[str, LocalCluster]
) -> None:
    lab: PulumiStack = fleet["stacks"][LAB]
    # The stack alone fits its cluster (the offline check passes): the wide gang and no other model.
    # On the cluster as it is, a pod made by hand holds a GPU of the leaf it needs whole.
    config = with_wide_model(clusters[LAB].kubeconfig)
    del config["models"]["qwen3-0-6b"]
    lab.write_config(config)
    clusters[LAB].kubectl("apply", "-f", "-", input=json.dumps(GPU_HOLDER))
    code, report, progress = run_fleet(fleet, "up")
    assert code == 1, progress[-4000:]
    row = by_stack(report)[LAB]
    assert row["step"] == "up" and row["result"] == "failed", progress[-4000:]
    gates = {g["gate"]: g for g in row["gates"]}
    assert gates["check"]["passed"] and gates["whatif"]["passed"], gates  # it waits, not `never`: let through
    assert "1 waits" in gates["whatif"]["said"], gates
    after = gates["workloads"]
    assert not after["passed"], after
    assert "PodGroup team-a/wide: phase Pending" in after["said"] and "Unschedulable" in after["said"], after
    assert "volcano-platform explain wide" in after["fix"], after
    assert by_stack(report)["fleet-eu"]["result"] == "not started"
