"""The what-if at scale: a dump of 10,000 nodes, 50,000 pods and 2,000 PodGroups with the huge
benchmark stack (1,000 models), read and answered as `volcano-platform whatif --from` does.

    .venv/bin/python bench/whatif.py [--size huge] [--scenario first|change] [--repeat 3] [--engine model|volcano]

The dump is synthetic: the stack's nodes with their GPUs, their topology and hostname labels, the
stack's extended resources, 64 cores and 1 TiB each, and per tenant queue PodGroups of 25 one-GPU
pods already running, five pods to a node, so a third of the GPUs are busy and every model has to
be placed around them.

Two scenarios. `first`: the stack's first `pulumi up` on that cluster, all 1,000 models new at
once (most of them evict batch gangs, which then reclaim from each other for several cycles).
`change`: the pull request a platform team reviews day to day, on the cluster as the stack left it
(the models running where the what-if placed them, the batch gangs as they settled) with one model
in a hundred new.

`--engine volcano` answers with Volcano's own scheduling code (`whatif.volcano`, one run of it per
question, so no tie detection) instead of the model; its figure includes the model's answer, which
it is compared with.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
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
from live.cluster_state import read_file, state_from_objects
from offline.render import render_stack
from whatif.predict import policy_of, predict, simulate
from whatif.scheduler.model import BINDING, RUNNING
from whatif.volcano.predict import predict_with_volcano
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
    return {"apiVersion": "v1", "kind": "List", "items": items}


NEW_EVERY = 100
"""`change`: every hundredth model is new in the pull request."""


def settled(spec: Any, rendered: Any, first: dict[str, Any]) -> dict[str, Any]:
    """The cluster once the stack's first `pulumi up` has settled, as the what-if predicts it:
    nodes as before, the batch pods where they run (or Pending), each model's running pods with
    their PodGroups; the pods of every `NEW_EVERY`th model are left out, so those are new."""
    session, models = build_session(state_from_objects(first["items"], "bench"), spec, rendered)
    tiers, actions, configurations = policy_of(spec)
    session.configurations = configurations
    simulate(session, tiers, actions)
    items = [o for o in first["items"] if o["kind"] in ("Node", "PodGroup")]
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
        if found is None or number % NEW_EVERY == 0:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="huge", choices=list(SIZES))
    parser.add_argument("--scenario", default="first", choices=["first", "change"])
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions of one answer")
    parser.add_argument("--engine", default="model", choices=["model", "volcano"])
    args = parser.parse_args(argv)
    answer_with = predict if args.engine == "model" else functools.partial(predict_with_volcano, repeat=1)
    with tempfile.TemporaryDirectory() as tmp:
        stack_path = write_stack_dir(SIZES[args.size], Path(tmp))
        render = render_stack(PROJECT_DIR, f"bench-{args.size}", stack_path)
        dump_path = Path(tmp) / "cluster.json"
        data = dump(render.spec)
        if args.scenario == "change":
            data = settled(render.spec, render.rendered, data)
        dump_path.write_text(json.dumps(data))
        read, answer = [], []
        result = None
        for _ in range(args.repeat):
            gc.disable()  # as the console script runs every command (`cli.run`)
            started = time.perf_counter()
            state = read_file(dump_path)
            read.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = answer_with(state, render.spec, render.rendered)
            answer.append(time.perf_counter() - started)
            gc.enable()
            gc.collect()
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(predict, state, render.spec, render.rendered)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.profile)
    assert result is not None
    verdicts: dict[str, int] = {}
    for verdict in result.verdicts:
        verdicts[verdict.verdict] = verdicts.get(verdict.verdict, 0) + 1
    figures = {
        "nodes": len(state.nodes),
        "pods": len(state.pods),
        "pod_groups": len(state.pod_groups),
        "models": len(render.spec.models),
        "read_s": round(statistics.median(read), 2),
        "predict_s": round(statistics.median(answer), 2),
        "total_s": round(statistics.median(read) + statistics.median(answer), 2),
        "verdicts": verdicts,
        "repeat": args.repeat,
        "engine": args.engine,
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
