"""The what-if at scale: a dump of 10,000 nodes, 50,000 pods and 2,000 PodGroups with the huge
benchmark stack (1,000 models), read and answered as `volcano-platform whatif --from` does.

    .venv/bin/python bench/whatif.py [--repeat 3] [--results bench/results.md]

The dump is synthetic: the stack's nodes with their GPUs, the stack's extended resources, 64 cores
and 1 TiB each, and per tenant
queue PodGroups of 25 one-GPU pods already running, five pods to a node, so a third of the GPUs
are busy and every model has to be placed around them.
"""

from __future__ import annotations

import argparse
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
from live.cluster_state import read_file
from offline.render import render_stack
from whatif.predict import predict

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
                "metadata": {"name": name, "labels": topology.labels_of(name)},
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", default="huge", choices=list(SIZES))
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the top N functions of one answer")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        stack_path = write_stack_dir(SIZES[args.size], Path(tmp))
        render = render_stack(PROJECT_DIR, f"bench-{args.size}", stack_path)
        dump_path = Path(tmp) / "cluster.json"
        data = dump(render.spec)
        dump_path.write_text(json.dumps(data))
        read, answer = [], []
        result = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            state = read_file(dump_path)
            read.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = predict(state, render.spec, render.rendered)
            answer.append(time.perf_counter() - started)
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
    }
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
