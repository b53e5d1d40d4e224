"""The cluster and stack the what-if's end-to-end modules share, and the steps of a round: the
stack switched to a round's cells, the work beside it applied, the cluster recorded with
`volcano-platform snapshot`, `whatif --from` answered by both engines, `up` applied and the pods
read once the scheduler has settled (`test_whatif_real.py`, `test_whatif_lose_real.py`)."""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.main import main
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiError, PulumiStack
from tests.e2e.stacks import e2e_config
from tests.e2e.whatif_cells import BATCH, TAINT_KEY, Cell, cell_nodes, gang_objects, stack_changes

STACK = "e2ewhatif"
BUDGETS = {"placeTimeoutSeconds": 30, "loadTimeoutSeconds": 30}
"""The shortest `up` waits for a model that does not run (the keys' minimum): a minute."""
ENGINES = ("volcano", "model")


QUEUE_CACHE_LAG = "can not be deleted because it has"


def up_past_queue_cache_lag(pulumi: PulumiStack) -> None:
    """`up`, and once more when Volcano's queue webhook refused to delete a parent queue whose
    child the same `up` had just deleted: the webhook counts children in its informer cache
    (volcano v1.15.1 pkg/webhooks/admission/queues/validate/validate_queue.go,
    `validateQueueDeleting`), which can lag the deletion on a busy machine. The second `up`
    meets the cache caught up (`docs/operations.md`, "Reshaping queues")."""
    result = pulumi.up(check=False)
    if result.returncode != 0 and QUEUE_CACHE_LAG in result.output:
        result = pulumi.up(check=False)
    if result.returncode != 0:
        raise PulumiError(f"`pulumi up` exited {result.returncode}:\n{result.output[-6000:]}")


@dataclass
class Stack:
    """The one stack every test of a module changes, and the cells its models were last for."""

    pulumi: PulumiStack
    previous: list[Cell] = field(default_factory=list)

    def switch(self, cluster: LocalCluster, cells: list[Cell], after: bool) -> None:
        """The previous cells' models gone first (`up` deletes only after it has created), then
        the stack before or after the change of `cells`."""
        if self.previous:
            self.pulumi.write_config(config(cluster, self.previous, after=None))
            up_past_queue_cache_lag(self.pulumi)
        self.pulumi.write_config(config(cluster, cells, after=after))
        self.previous = cells


def new_stack(cluster: LocalCluster, programs: dict[str, Path], cells: list[Cell]) -> Stack:
    """The stack on `cluster`, written for `cells` before their change, and the batch namespace."""
    pulumi = PulumiStack.create(cluster.folder / "project", STACK, config(cluster, cells, False), programs)
    cluster.kubectl("create", "namespace", BATCH)
    return Stack(pulumi)


def config(cluster: LocalCluster, cells: list[Cell], after: bool | None) -> dict[str, Any]:
    """The stack before (`False`) or after (`True`) the change of a round, or with its tenants
    and no model (`None`)."""
    raw = e2e_config("dev", cluster.kubeconfig, stack_changes(cells, bool(after)))
    if after is None:
        raw["models"] = {}
    raw["cluster"]["gpusPerNode"] = 4
    for holder in [raw["modelDefaults"], *raw["models"].values()]:
        holder["startup"] = dict(BUDGETS)
    return raw


def apply(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    if objects:
        cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def round_pods(cluster: LocalCluster) -> list[dict[str, Any]]:
    return [
        p
        for p in cluster.get_json("pods", "-A")["items"]
        if p["metadata"]["namespace"] == BATCH or p["metadata"]["namespace"].startswith("r")
    ]


def settle(cluster: LocalCluster, quiet: float = 6.0, limit: float = 90.0) -> list[dict[str, Any]]:
    """The pods once nothing has changed for `quiet` seconds (the scheduler runs every second)."""
    deadline = time.monotonic() + limit
    last, since = None, time.monotonic()
    while True:
        pods = round_pods(cluster)
        signature = sorted(
            (p["metadata"]["uid"], p["spec"].get("nodeName", ""), bool(p["metadata"].get("deletionTimestamp")))
            for p in pods
        )
        if signature != last:
            last, since = signature, time.monotonic()
        elif time.monotonic() - since >= quiet or time.monotonic() > deadline:
            return pods
        time.sleep(1.0)


def reset(cluster: LocalCluster) -> None:
    """The previous round's work beside the stack gone, every node schedulable and untainted."""
    cluster.kubectl("delete", "deployments,podgroups.scheduling.volcano.sh", "--all", "-n", BATCH, "--wait=true")
    cluster.kubectl("delete", "pods", "--all", "-n", BATCH, "--grace-period=0", "--force", "--wait=true")
    cluster.kubectl("delete", "queues.scheduling.volcano.sh", "-l", "whatif.example.com/batch=true", "--wait=true")
    for node in cell_nodes():
        name = node["metadata"]["name"]
        cluster.kubectl("uncordon", name)
        cluster.kubectl("taint", "nodes", name, f"{TAINT_KEY}-", check=False)


def up_whatever_runs(stack: PulumiStack) -> None:
    """Every object applied even where a model's wait fails the `up` (the provider's await of a
    model that does not run); the tests compare what the scheduler did with them."""
    stack.program_command("up", "--yes", "--skip-preview", "--non-interactive", "--continue-on-error", check=False)


def run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def priorities(cluster: LocalCluster) -> dict[str, int]:
    return {pc["metadata"]["name"]: pc["value"] for pc in cluster.get_json("priorityclasses")["items"]}


def beside(cluster: LocalCluster, cells: list[Cell]) -> None:
    """The cells' batch queues and gangs, then their cordoned and tainted nodes."""
    queues = [q for cell in cells for q in cell.batch_queues]
    for queue in queues:
        queue["metadata"]["labels"] = {"whatif.example.com/batch": "true"}
    apply(cluster, queues)
    apply(cluster, [o for cell in cells for gang in cell.gangs for o in gang_objects(gang, cell.index)])
    settle(cluster)
    for cell in cells:
        for node in cell.cordoned:
            cluster.kubectl("cordon", node)
        for node in cell.tainted:
            cluster.kubectl("taint", "nodes", node, f"{TAINT_KEY}=true:NoSchedule")


def snapshot(cluster: LocalCluster, stack: PulumiStack, folder: Path, name: str) -> tuple[Path, Path]:
    """The stack file as it is now and the cluster recorded with `volcano-platform snapshot`."""
    candidate = folder / f"Pulumi.{STACK}.yaml"
    candidate.write_text(stack.stack_file.read_text())
    recorded = folder / f"{name}.json"
    code, _ = run(
        [
            "snapshot",
            "--stack",
            STACK,
            "--config-file",
            str(candidate),
            "--out",
            str(recorded),
            "--kubeconfig",
            str(cluster.kubeconfig),
        ]
    )
    assert code == 0
    return candidate, recorded


def whatif(candidate: Path, recorded: Path, engine: str, *extra: str) -> dict[str, Any]:
    """`whatif --json` of the stack file on the snapshot, by one engine."""
    command = ["whatif", "--stack", STACK, "--config-file", str(candidate), "--from", str(recorded), "--json"]
    code, out = run([*command, "--engine", engine, *extra])
    assert code in (0, 1), out
    result: dict[str, Any] = json.loads(out)
    return result


def difference(label: str, cell: Cell, predicted: dict[str, Any], seen: dict[str, Any], answer: str) -> str:
    """A cell the what-if got wrong, as the test prints it: each model's `answer` (a field of its
    row) beside what the cluster did, and the victims predicted beside the real ones."""
    models = {m: (predicted[m]["row"][answer], seen[m]) for m in cell.after}
    victims = f"victims predicted {predicted[cell.name]['victims']}, real {seen[cell.name]['victims']}"
    return f"{label}: models {models}; {victims}"
