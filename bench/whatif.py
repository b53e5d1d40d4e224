"""The what-if at scale, both engines side by side, from the command as users run it: a dump of
nodes, pods and PodGroups with a synthetic stack, answered by `volcano-platform whatif --from`
with `--engine model` and `--engine volcano`, each timed (wall clock) and measured (the peak of
the resident memory of the command and every process it starts, sampled every 50 ms).

    .venv/bin/python bench/whatif.py [--size small|large|huge ...] [--scenario first|change]

The dump is synthetic: the stack's nodes with their GPUs, their topology and hostname labels, the
stack's extended resources, 64 cores and 1 TiB each, and per tenant queue PodGroups of 25 one-GPU
pods already running, five pods to a node, so a third of the GPUs are busy and every model has to
be placed around them.

Two scenarios. `first`: the stack's first `pulumi up` on that cluster, all models new at once.
`change` (default): the pull request a platform team reviews day to day, on the cluster as the
stack left it (the models running where the model placed them, or Volcano's code: `settled`) with
one model in a hundred new.
The command's time includes rendering the stack (`render_s`, measured apart).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stack_dir import write_stack_dir
from bench.synthetic import GPU, SIZES
from cli.render_commands import PROJECT_DIR
from config.platform_labels import MANAGED_BY, MODEL_LABEL
from config.upstream.lws import LWS_GROUP_INDEX_LABEL, LWS_NAME_LABEL
from config.upstream.volcano import GROUP_NAME_ANNOTATION
from live.cluster_state import state_from_objects
from offline.render import render_stack
from whatif.predict import policy_of, simulate
from whatif.scheduler.model import BINDING, RUNNING
from whatif.volcano.predict import settle_with_volcano
from whatif.workload import build_session, pod_templates, rendered_index

HOSTNAME = "kubernetes.io/hostname"
"""The kubelet labels every node with its own name."""
PODS_PER_GROUP, PODS_PER_NODE = 25, 5
"""A PodGroup per five nodes: 2,000 PodGroups and 50,000 pods at 10,000 nodes."""


def dump(spec: Any) -> dict[str, Any]:
    topology = spec.topology
    items: list[dict[str, Any]] = []
    nodes = sorted(topology.node_leaf)
    devices = dict.fromkeys(spec.config.cluster.extended_resources, "8")  # e.g. the RDMA HCAs
    for name in nodes:
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {**topology.labels_of(name), HOSTNAME: name}},
                "status": {
                    "allocatable": {
                        "cpu": "64",
                        "memory": "1Ti",
                        "pods": "110",
                        GPU: str(topology.node_gpus[name]),
                        **devices,
                    }
                },
            }
        )
    queues = [t.queue_name for t in spec.tenants.values() if t.leaf]
    slot = 0
    for group in range(len(nodes) // PODS_PER_NODE):
        queue = queues[group % len(queues)]
        name = f"batch-{group}"
        requests = {"cpu": "1", "memory": "8Gi", GPU: "1"}
        items.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "batch"},
                "spec": {"minMember": PODS_PER_GROUP, "queue": queue},
                "status": {"phase": "Running"},
            }
        )
        for pod in range(PODS_PER_GROUP):
            node = nodes[(slot // PODS_PER_NODE) % len(nodes)]
            slot += 1
            items.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{pod}",
                        "namespace": "batch",
                        "annotations": {"scheduling.k8s.io/group-name": name},
                    },
                    "spec": {"nodeName": node, "containers": [{"name": "w", "resources": {"requests": requests}}]},
                    "status": {"phase": "Running"},
                }
            )
    for namespace in sorted({model.namespace for model in spec.models.values()}):
        # The weight claim every model mounts (`modelDefaults.source.pvc`), so no model waits for it.
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "models", "namespace": namespace},
                "status": {"phase": "Bound"},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


NEW_EVERY = 100
"""`change`: every hundredth model is new in the pull request."""


def settled(
    spec: Any, rendered: Any, first: dict[str, Any], by: str = "model", new_every: int = NEW_EVERY
) -> dict[str, Any]:
    """The cluster once the stack's first `pulumi up` has settled, with the pods of every
    `new_every`th model left out (0: none), so those are new. `by`: whose placement it holds. The
    model's (`model`, the default) is quick to find. With `volcano` Volcano's code then settles the
    model's placement for `MAX_CYCLES` sessions more, as the real scheduler would go on from it
    (`docs/decisions.md`: the two engines part on multi-node models at 10,000 nodes; there that
    takes minutes, and Volcano's code is still reclaiming at the end)."""
    session, models = build_session(state_from_objects(first["items"], "bench"), spec, rendered)
    tiers, actions, configurations = policy_of(spec)
    session.configurations = configurations
    simulate(session, tiers, actions)
    if by == "volcano":
        whole = _cluster(spec, rendered, first, session, models, new_every=0)
        session, models = settle_with_volcano(state_from_objects(whole["items"], "bench"), spec, rendered)
    return _cluster(spec, rendered, first, session, models, new_every)


def _cluster(
    spec: Any, rendered: Any, first: dict[str, Any], session: Any, models: dict[str, Any], new_every: int
) -> dict[str, Any]:
    """`first`'s nodes and batch pods with every pod where `session` placed it (Pending where it
    placed none), and each model's running pods; every `new_every`th model's left out (0: none)."""
    items = [o for o in first["items"] if o["kind"] in ("Node", "PodGroup", "PersistentVolumeClaim")]
    placed = {t.uid: t for j in session.jobs.values() for t in j.tasks if t.status in (RUNNING, BINDING)}
    for pod in (o for o in first["items"] if o["kind"] == "Pod"):
        task = placed.get(f"batch/{pod['metadata']['name']}")
        spec_ = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
        if task is not None:
            spec_["nodeName"] = task.node
        items.append({**pod, "spec": spec_, "status": {"phase": "Running" if task else "Pending"}})
    index = rendered_index(rendered)
    for number, (name, jobs) in enumerate(models.items()):
        model = spec.models[name]
        found = pod_templates(model, index)
        if found is None or (new_every and number % new_every == 0):
            continue
        templates, _replicas, size = found
        for uid in jobs.jobs:
            job = session.jobs[uid]
            running = [t for t in job.tasks if t.uid in placed]
            if len(running) < job.min_member:
                continue
            group = job.name
            items.append(
                {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": group, "namespace": model.namespace},
                    "spec": {"minMember": job.min_member, "queue": job.queue},
                    "status": {"phase": "Running"},
                }
            )
            for task in running:
                pod_name = task.name.replace("-new-", "-")  # <model>-<replica>[-<position>]
                parts = pod_name.removeprefix(f"{name}-").split("-")
                template = templates[int(parts[-1])] if size > 1 else templates[0]
                metadata = template.get("metadata") or {}
                labels = {**(metadata.get("labels") or {}), **MANAGED_BY, MODEL_LABEL: name}
                if size > 1:
                    labels |= {LWS_NAME_LABEL: name, LWS_GROUP_INDEX_LABEL: parts[0]}
                items.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": pod_name,
                            "namespace": model.namespace,
                            "labels": labels,
                            "annotations": {GROUP_NAME_ANNOTATION: group},
                        },
                        "spec": {**(template.get("spec") or {}), "nodeName": task.node},
                        "status": {"phase": "Running"},
                    }
                )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        total += next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        todo.extend(int(child) for child in children)
    return total


def run_measured(command: list[str]) -> tuple[float, int, int, str]:
    """(wall seconds, peak resident bytes of the process tree, exit code, standard output)."""
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=PROJECT_DIR)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _tree_rss(process.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - started
        out.seek(0)
        return wall, peak, process.returncode, out.read().decode()


def measure(size: str, scenario: str, engines: list[str], settled_by: str = "model") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        stack_path = write_stack_dir(SIZES[size], Path(tmp))
        started = time.perf_counter()
        render = render_stack(PROJECT_DIR, f"bench-{size}", stack_path)
        render_s = time.perf_counter() - started
        data = dump(render.spec)
        if scenario == "change":
            started = time.perf_counter()
            data = settled(render.spec, render.rendered, data, settled_by)
            settle_s = time.perf_counter() - started
        dump_path = Path(tmp) / "cluster.json"
        dump_path.write_text(json.dumps(data))
        counts = {kind: sum(1 for o in data["items"] if o["kind"] == kind) for kind in ("Node", "Pod", "PodGroup")}
        row: dict[str, Any] = {"size": size, "scenario": scenario, **counts, "models": len(render.spec.models)}
        row["render_s"] = round(render_s, 1)
        if scenario == "change":
            row |= {"settled_by": settled_by, "settle_s": round(settle_s, 1)}
        for engine in engines:
            command = [sys.executable, "-m", "cli", "whatif", "--stack", f"bench-{size}"]
            command += ["--config-file", str(stack_path), "--from", str(dump_path), "--engine", engine, "--json"]
            wall, peak, code, out = run_measured(command)
            answer = json.loads(out) if out.strip().startswith("{") else {}
            verdicts: dict[str, int] = {}
            for model in answer.get("models", []):
                verdicts[model["verdict"]] = verdicts.get(model["verdict"], 0) + 1
            row[engine] = {
                "exit": code,
                "wall_s": round(wall, 1),
                "peak_mib": peak // 2**20,
                "answered_by": answer.get("engine"),
                "verdicts": verdicts,
            }
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", nargs="+", default=["1k", "2k", "huge"], choices=list(SIZES))
    parser.add_argument("--scenario", default="change", choices=["first", "change"])
    parser.add_argument("--engine", nargs="+", default=["model", "volcano"], choices=["model", "volcano"])
    parser.add_argument("--settled-by", default="model", choices=["model", "volcano"], help="`change`: see `settled`")
    args = parser.parse_args(argv)
    for size in args.size:
        print(json.dumps(measure(size, args.scenario, args.engine, args.settled_by)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
