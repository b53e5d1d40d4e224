"""`pulumi up` for real on the example cluster of the seed article: 128 KWOK GPU nodes in two leaf
pairs under one spine pair (`tests/fixtures/cluster/aicloud-a-fresh.yaml`), HyperNodes built by
Volcano's controller from the labels the stack sets, a two-node model as a LeaderWorkerSet gang
placed by Volcano's scheduler inside one leaf pair.

The tests run in order on one cluster: up from empty, a preview that shows nothing, the gang
placed, a change whose evictions the what-if names before it is applied.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from live.cluster_state import ClusterState
from live.preflight.hypernodes import check_hypernode_parents
from live.preflight.report import Report
from sandbox.api import PREVIEW_TOKEN, PREVIEW_USER, KubectlError
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack
from tests.conftest import PROJECT_DIR, TOOL
from tests.e2e.conftest import start_cluster
from tests.e2e.stacks import e2e_config, recorded_nodes, secret_names, stand_in_chart

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
STACK = "e2eaicloud"
GANG_MODEL = "qwen2-72b-tenanta"
LEAF = "topology.aicloud/leaf-pair"


def example_config(kubeconfig: Path, lws_chart: Path) -> dict[str, Any]:
    """The example stack, its two-node model held inside one leaf pair (hard, tier 1), and a chart
    installed by Helm as release `lws`, its records in ConfigMaps as the example keeps them
    (`cluster.helmReleaseStorage: configmap`)."""
    raw = e2e_config("aicloud-a", kubeconfig)
    raw["models"][GANG_MODEL]["topology"] = {"mode": "hard", "highestTier": 1}
    raw["lws"] = {"install": True, "chart": str(lws_chart)}
    return raw


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, real_programs: dict[str, Path]) -> Iterator[LocalCluster]:
    nodes = recorded_nodes("aicloud-a-fresh.yaml")
    yield from start_cluster(tmp_path_factory.mktemp("example-cluster"), real_programs, nodes)


@pytest.fixture(scope="module")
def stack_kubeconfig(cluster: LocalCluster) -> Path:
    """The stack's own kubeconfig file: the preview test swaps its user for the preview identity's
    (the provider's settings name the file, so they stay the same) without touching the file the
    cluster's processes read."""
    path = cluster.folder / "stack-kubeconfig"
    path.write_text(cluster.kubeconfig_text())
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def stack(cluster: LocalCluster, stack_kubeconfig: Path, real_programs: dict[str, Path]) -> PulumiStack:
    return PulumiStack.create(
        cluster.folder / "project",
        STACK,
        example_config(stack_kubeconfig, stand_in_chart(cluster.folder)),
        real_programs,
        secret_names("aicloud-a"),
    )


@pytest.fixture(scope="module")
def applied(cluster: LocalCluster, stack: PulumiStack) -> str:
    """`up`, with preflight's `hypernode-two-parents` fix applied while it runs (`mended`): `up`
    waits for the gang, and Volcano places no job with a network topology while discovery's
    duplicate spine stands."""
    with mending(cluster):
        return stack.up().output


def pods_of(cluster: LocalCluster, namespace: str, model: str) -> list[dict[str, Any]]:
    return cluster.get_json("pods", "-n", namespace, "-l", f"app.kubernetes.io/instance={model}")["items"]


def test_queues_open_and_hypernodes_built_from_the_labels(cluster: LocalCluster, applied: str) -> None:
    for tenant in ("tenanta", "tenantb"):
        cluster.wait_for(
            lambda t=tenant: cluster.get_json("queues.scheduling.volcano.sh", t)["status"].get("state") == "Open",
            60,
            f"Queue {tenant} to be Open",
        )

    leaf_pairs: dict[str, set[str]] = {}
    for node in cluster.get_json("nodes", "-l", LEAF)["items"]:
        leaf_pairs.setdefault(node["metadata"]["labels"][LEAF], set()).add(node["metadata"]["name"])

    def built() -> bool:
        """A tier-1 HyperNode holding exactly each leaf pair's nodes and a tier-2 one above two
        HyperNodes. Volcano v1.15.1's label discovery can also leave a duplicate of a leaf
        behind: two discovery runs a tenth of a second apart (the controller's conf arriving
        while it runs), the second listing HyperNodes before the first one's creation reached
        its cache (pkg/controllers/hypernode/hypernode_controller.go, reconcileTopology); the
        duplicate holds the same nodes and is not counted here."""
        items = cluster.get_json("hypernodes.topology.volcano.sh")["items"]
        leaves = [
            {m["selector"]["exactMatch"]["name"] for m in h["spec"]["members"]}
            for h in items
            if h["spec"]["tier"] == 1 and _member_types(h) == {"Node"}
        ]
        spines = [h for h in items if h["spec"]["tier"] == 2 and _member_types(h) == {"HyperNode"}]
        return all(nodes in leaves for nodes in leaf_pairs.values()) and any(
            len(h["spec"]["members"]) >= 2 for h in spines
        )

    assert sorted(len(nodes) for nodes in leaf_pairs.values()) == [64, 64]
    cluster.wait_for(built, 240, "Volcano's controller to build the HyperNodes from the node labels")
    mended(cluster)


def mend_once(cluster: LocalCluster) -> list[str]:
    """Preflight's `hypernode-two-parents` on the live HyperNodes, and its fix applied: the same
    discovery race can leave a second spine over both leaves, and then Volcano's scheduler builds
    no HyperNode cache and places no job with a network topology until the duplicate is deleted
    (`live/preflight/hypernodes.py`). Returns the HyperNodes deleted."""
    report = Report("e2e", "live")
    check_hypernode_parents(
        ClusterState(source="live", hyper_nodes=cluster.get_json("hypernodes.topology.volcano.sh")["items"]),
        report,
    )
    deleted = sorted({n for f in report.findings for n in re.findall(r"delete hypernode (\S+?)`", f.fix)})
    assert deleted or not report.findings, [f.fix for f in report.findings]
    for name in deleted:
        cluster.kubectl("delete", "hypernode", name, "--ignore-not-found")
    return deleted


@contextmanager
def mending(cluster: LocalCluster) -> Iterator[None]:
    """`mend_once` every second in the background while the block runs (beside `up`, from before
    Volcano's HyperNode kind exists)."""
    done = threading.Event()

    def mend_until_done() -> None:
        while not done.wait(1):
            with suppress(KubectlError):  # the HyperNode kind is not installed yet
                mend_once(cluster)

    mender = threading.Thread(target=mend_until_done, daemon=True)
    mender.start()
    try:
        yield
    finally:
        done.set()
        mender.join()


def mended(cluster: LocalCluster) -> list[str]:
    """`mend_once` until the HyperNodes have been sound for a few seconds, since discovery runs on
    for a moment; returns the HyperNodes deleted."""
    deleted: list[str] = []
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 5:
        found = mend_once(cluster)
        if found:
            quiet_since = time.monotonic()
            deleted += found
        time.sleep(1)
    return deleted


def _member_types(hyper_node: dict[str, Any]) -> set[str]:
    return {m["type"] for m in hyper_node["spec"]["members"]}


def test_a_preview_right_after_shows_no_change(stack: PulumiStack, applied: str) -> None:
    result = stack.preview("--expect-no-changes", check=False)
    assert result.returncode == 0, result.output[-4000:]


def test_the_preview_identity_previews_with_the_role_it_is_given_and_reads_no_other_secret(
    cluster: LocalCluster, stack: PulumiStack, stack_kubeconfig: Path, applied: str
) -> None:
    """`preview-role` bound to a user with no other rights: `pulumi preview --refresh` (every read of
    a refresh: each object, its awaiters' lists) succeeds and shows no change, while a Secret the
    stack does not manage, beside one it does, can be neither read nor listed."""
    command = [*TOOL, "preview-role", "--stack", STACK, "--config-file", str(stack.stack_file),
               "--subject", f"User:{PREVIEW_USER}"]  # fmt: skip
    role = subprocess.run(command, cwd=PROJECT_DIR, env=stack.env, capture_output=True, text=True, timeout=600)
    assert role.returncode == 0, role.stderr[-3000:]
    cluster.kubectl("apply", "-f", "-", input=role.stdout)
    cluster.kubectl("create", "secret", "generic", "someone-elses-token", "-n", "a01", "--from-literal=token=x")
    in_a01 = {o["metadata"]["name"] for o in cluster.get_json("secrets", "-n", "a01")["items"]}
    own = sorted(in_a01 - {"someone-elses-token"})
    assert own, "the stack manages Secrets in a01"
    admin = stack_kubeconfig.read_text()
    preview = cluster.folder / "preview-kubeconfig"
    preview.write_text(cluster.kubeconfig_text(PREVIEW_TOKEN))

    def as_preview(*args: str) -> subprocess.CompletedProcess[str]:
        kubectl = [str(cluster.programs["kubectl"]), "--kubeconfig", str(preview), *args]
        return subprocess.run(kubectl, capture_output=True, text=True, timeout=120, check=False)

    # Helm keeps the release's records in ConfigMaps, which the role lists; no Secret of lws-system.
    records = cluster.get_json("configmaps", "-n", "lws-system", "-l", "owner=helm,name=lws")["items"]
    assert [r["metadata"]["name"] for r in records] == ["sh.helm.release.v1.lws.v1"]
    assert not cluster.get_json("secrets", "-n", "lws-system", "-l", "owner=helm")["items"]
    assert as_preview("get", "configmaps", "-n", "lws-system").returncode == 0
    assert as_preview("get", "secret", own[0], "-n", "a01").returncode == 0
    for refused in (["get", "secret", "someone-elses-token", "-n", "a01"], ["get", "secrets", "-n", "a01"],
                    ["get", "secrets", "-n", "kube-system"], ["get", "secrets", "-n", "lws-system"]):  # fmt: skip
        result = as_preview(*refused)
        assert result.returncode != 0 and "forbidden" in result.stderr.lower(), (refused, result.stderr)
    try:
        stack_kubeconfig.write_text(cluster.kubeconfig_text(PREVIEW_TOKEN))
        result = stack.preview("--refresh", "--expect-no-changes", check=False)
    finally:
        stack_kubeconfig.write_text(admin)
    assert result.returncode == 0, result.output[-4000:]


def test_the_two_node_model_runs_as_one_gang_inside_one_leaf_pair(cluster: LocalCluster, applied: str) -> None:
    mended(cluster)

    def running() -> list[dict[str, Any]]:
        pods = pods_of(cluster, "a01", GANG_MODEL)
        return pods if len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods) else []

    pods = cluster.wait_for(running, 180, "the LeaderWorkerSet's two pods to run")
    leaves = {cluster.get_json("nodes", p["spec"]["nodeName"])["metadata"]["labels"][LEAF] for p in pods}
    assert len(leaves) == 1, leaves
    groups = {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods}
    assert len(groups) == 1
    (group,) = groups
    podgroup = cluster.get_json("podgroups.scheduling.volcano.sh", group, "-n", "a01")
    assert podgroup["status"]["phase"] == "Running"
    assert podgroup["spec"]["minMember"] == 2


def test_the_single_node_model_is_bound(cluster: LocalCluster, applied: str) -> None:
    def running() -> list[dict[str, Any]]:
        return [p for p in pods_of(cluster, "a01", "qwen8b-preemptor") if p["status"].get("phase") == "Running"]

    assert cluster.wait_for(running, 180, "the single-node model to run")
