"""Day two for real: a platform team's second week with the real Pulumi CLI and provider on one
local cluster (the tests run in order and share it), each change followed by a preview that must
show nothing left to do.

- The policy pack, run by the real CLI (started as an executable analyzer, since the Python
  language plugin that runs a pack folder is not built here): a clean pass, and a rule the platform
  makes mandatory blocking an `up` before anything is created.
- Drift: by `kubectl` on a Queue (set back by `up --refresh`), by another field manager on the
  scheduler policy (the stack owns that key outright) and on a Deployment (a conflict every
  preview fails on, until `cluster.forceFieldOwnership` takes the field back), and a deleted
  Service (created again). Preflight names each before a preview runs into it.
- A secret rotated in place: the Secret keeps its identity, so no pod starting meanwhile finds none.
- A tenant removed (its namespace kept, its queue deleted) and added back: preflight tells the kept
  namespace from a managed one, and adopting it converges. The stand-in provider (the v4.25.0
  commit) creates by server-side apply and so would take the namespace over unasked; the release
  users run (4.34.2, client-side create since 4.29) fails with AlreadyExists. The test adopts it
  as the docs say and relies on neither.
- `destroy` after all of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.preview_report import failed_on_conflict, report
from live.cluster_state import read_file
from live.preflight import preflight
from offline.render import render_stack
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import dev_nodes, e2e_config

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2edaytwo"
SECRET = "api-key"


def day_two_config(kubeconfig: Path, forced: bool = False) -> dict[str, Any]:
    """The dev stack with a second tenant and a model that reads a secret; `forced`: with
    `cluster.forceFieldOwnership`."""
    raw = e2e_config("dev", kubeconfig)
    raw["tenants"]["team-b"] = {"queue": {"capability": {"nvidia.com/gpu": 2}}}
    model = raw["models"]["qwen3-0-6b"]
    model["env"] = {**(model.get("env") or {}), "VLLM_API_KEY": {"secret": SECRET}}
    if forced:
        raw["cluster"]["forceFieldOwnership"] = True
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    yield from start_cluster(tmp_path_factory.mktemp("day-two-cluster"), real_programs, dev_nodes())


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, real_programs: dict[str, Path]) -> PulumiStack:
    made = PulumiStack.create(
        cluster.folder / "project", STACK, day_two_config(cluster.kubeconfig), real_programs, secrets=[SECRET]
    )
    made.up()
    return made


def pull_request_preview(stack: PulumiStack) -> tuple[bool, str]:
    """What a pull request's preview reports (.github/scripts/pulumi-run.sh, whose shell the
    project tests run with a stand-in CLI): the preview's JSON, taken again with the provider's
    force when it failed on a field conflict. (forced, report)."""
    args = ("preview", "--refresh", "--non-interactive", "--json")
    first = stack.program_command(*args, check=False)
    if first.returncode == 0:
        return False, report(json.loads(first.stdout))
    failed = json.loads(first.stdout)
    assert failed_on_conflict(failed), first.output[-3000:]
    forced = stack.program_command(*args, env={"PULUMI_K8S_ENABLE_PATCH_FORCE": "true"})
    return True, report(json.loads(forced.stdout), conflicts=failed)


def no_changes(stack: PulumiStack) -> None:
    stack.preview("--refresh", "--expect-no-changes")


def findings(cluster: LocalCluster, stack: PulumiStack) -> dict[tuple[str, str], Any]:
    """Preflight of the stack file on the cluster as it is now."""
    render = render_stack(PROJECT_DIR, STACK, stack.stack_file)
    state = read_file(cluster.dump(cluster.folder / "dump.json"))
    return {(f.check, f.subject): f for f in preflight(render.spec, render.rendered, state).findings}


def test_the_policy_pack_runs_under_the_real_cli_and_passes(stack: PulumiStack) -> None:
    result = stack.preview("--policy-pack", str(stack.policy_pack), "--expect-no-changes")
    assert "Policy Packs run" in result.output and "volcano-platform|local" in result.output, result.output[-3000:]


def test_a_queue_changed_with_kubectl_is_set_back_by_up(cluster: LocalCluster, stack: PulumiStack) -> None:
    cluster.kubectl("patch", "queues.scheduling.volcano.sh", "team-a", "--type", "merge", "-p", '{"spec":{"weight":9}}')
    assert findings(cluster, stack)[("drift", "Queue team-a")].severity == "warning"
    # A pull request's preview does not fail on it: it shows the drift as the change `up` makes.
    _, shown = pull_request_preview(stack)
    assert "~ update    Queue team-a\n    spec.weight: 9 → 1" in shown, shown
    stack.program_command("up", "--yes", "--skip-preview", "--refresh", "--non-interactive")
    assert cluster.get_json("queues.scheduling.volcano.sh", "team-a")["spec"]["weight"] == 1
    no_changes(stack)


def _server_side(cluster: LocalCluster, manager: str, obj: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", "-f", "-", input=json.dumps(obj)
    )


def test_the_scheduler_policy_is_the_stacks_whoever_edits_it(cluster: LocalCluster, stack: PulumiStack) -> None:
    """An ops console's server-side apply of the policy key: the stack's patch is forced, so `up
    --refresh` takes the key back (and the preview before it does not fail)."""
    live = cluster.get_json("configmap", "volcano-scheduler-configmap", "-n", "volcano-system")
    key = "volcano-scheduler.conf"
    rendered = live["data"][key]
    edited = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {key: rendered.replace("enqueue", "enqueue, backfill", 1)},
    }
    _server_side(cluster, "ops-console", edited)
    stack.preview("--refresh")
    stack.program_command("up", "--yes", "--skip-preview", "--refresh", "--non-interactive")
    assert cluster.get_json("configmap", "volcano-scheduler-configmap", "-n", "volcano-system")["data"][key] == rendered
    no_changes(stack)


def test_a_field_another_manager_holds_is_named_and_taken_back_when_the_stack_says(
    cluster: LocalCluster, stack: PulumiStack
) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "qwen3-0-6b", "namespace": "team-a"},
        "spec": {"replicas": 3},
    }
    _server_side(cluster, "ops-console", deployment)
    finding = findings(cluster, stack)[("drift-other-manager", "Deployment team-a/qwen3-0-6b")]
    assert finding.severity == "error" and "`ops-console`" in finding.message
    # A pull request's preview is not red for it: it names the manager, the fix, and the change.
    forced, shown = pull_request_preview(stack)
    assert forced and shown.startswith("DRIFT THE STACK DOES NOT OWN: fields held on the cluster by `ops-console`")
    assert "~ update    Deployment team-a/qwen3-0-6b\n    spec.replicas: 3 → 1" in shown, shown
    stack.write_config(day_two_config(cluster.kubeconfig, forced=True))
    stack.program_command("up", "--yes", "--skip-preview", "--refresh", "--non-interactive")
    assert cluster.get_json("deployment", "qwen3-0-6b", "-n", "team-a")["spec"]["replicas"] == 1
    no_changes(stack)


def test_a_deleted_service_is_created_again(cluster: LocalCluster, stack: PulumiStack) -> None:
    cluster.kubectl("delete", "service", "qwen3-0-6b", "-n", "team-a")
    stack.program_command("up", "--yes", "--skip-preview", "--refresh", "--non-interactive")
    assert cluster.get_json("service", "qwen3-0-6b", "-n", "team-a")["metadata"]["name"] == "qwen3-0-6b"
    no_changes(stack)


def test_a_rotated_secret_is_updated_in_place(cluster: LocalCluster, stack: PulumiStack) -> None:
    before = cluster.get_json("secret", SECRET, "-n", "team-a")
    stack.cli("config", "set", "--stack", STACK, "--secret", "--path", f"volcano-platform:secrets.{SECRET}", "rotated")
    stack.up()
    after = cluster.get_json("secret", SECRET, "-n", "team-a")
    assert after["metadata"]["uid"] == before["metadata"]["uid"], "the Secret was replaced, not updated"
    assert after["data"] != before["data"]
    no_changes(stack)


def test_a_removed_tenant_added_back_is_adopted(cluster: LocalCluster, stack: PulumiStack) -> None:
    kubeconfig = cluster.kubeconfig
    without = day_two_config(kubeconfig, forced=True)
    without["tenants"].pop("team-b")
    stack.write_config(without)
    stack.up()
    kept = cluster.get_json("namespace", "team-b")
    assert kept["metadata"]["labels"]["volcano-platform.io/tenant"] == "team-b"
    back = day_two_config(kubeconfig, forced=True)
    stack.write_config(back)
    finding = findings(cluster, stack)[("exists-retained", "Namespace team-b")]
    assert "tenants.team-b.adopt: [namespaces]" in finding.fix
    back["tenants"]["team-b"]["adopt"] = ["namespaces"]
    stack.write_config(back)
    stack.up()
    back["tenants"]["team-b"].pop("adopt")
    stack.write_config(back)
    stack.up()
    no_changes(stack)
    assert not [f for f in findings(cluster, stack) if f[0] == "exists-retained"]


def test_a_mandatory_rule_of_the_pack_blocks_up(cluster: LocalCluster, stack: PulumiStack) -> None:
    """The platform raises the advisory `multi-node-topology` to mandatory; a two-node model with no
    network constraint is then refused by the pack, and `up` creates nothing of it."""
    config = day_two_config(cluster.kubeconfig, forced=True)
    config["models"]["spread"] = {
        **config["models"]["qwen3-0-6b"],
        "nodesPerReplica": 2,
        "resources": {"gpus": 2, "cpu": 8, "memory": "32Gi"},
        "engine": {"tensorParallelSize": 2, "pipelineParallelSize": 2},
        "env": {},
    }
    config["lws"] = {"install": False}
    config["volcano"] = {**config["volcano"], "scheduler": {"eviction": "gang"}}
    stack.write_config(config)
    pack_config = stack.folder / "policy-config.json"
    pack_config.write_text(json.dumps({"multi-node-topology": "mandatory"}))
    blocked = stack.program_command(
        "up",
        "--yes",
        "--non-interactive",
        "--policy-pack",
        str(stack.policy_pack),
        "--policy-pack-config",
        str(pack_config),
        check=False,
    )
    assert blocked.returncode != 0 and "multi-node-topology" in blocked.output, blocked.output[-3000:]
    assert not cluster.get_json("leaderworkersets.leaderworkerset.x-k8s.io", "-n", "team-a")["items"]


def test_destroy_after_day_two_finishes(cluster: LocalCluster, stack: PulumiStack) -> None:
    stack.write_config(day_two_config(cluster.kubeconfig, forced=True))
    stack.destroy()
    assert not cluster.get_json("queues.scheduling.volcano.sh")["items"] or all(
        q["metadata"]["name"] in ("default", "root") for q in cluster.get_json("queues.scheduling.volcano.sh")["items"]
    )
