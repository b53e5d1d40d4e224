"""Pools at scale: the cloud example grown to 10,000 nodes and 1,000 models, timed as `check`'s
load is (config load, checks, the placement plan per pool).

The example's three pools keep their kinds (two H100 pools on the fabric, described by their shape,
and an L40S pool outside it) at 4,096 + 4,096 + 1,808 nodes; its 20 tenants run 50 models each,
alternating between the pools, single-node and two-node gangs held inside one tier-1 domain.

Usage:  python bench/pools.py [--repeat 3]    # prints one JSON line
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import config
from config.stack_file.includes import merge_includes
from config.stack_file.reader import read_stack

MODELS_PER_TENANT = 50


ROOT = Path(__file__).resolve().parent.parent


def pools_stack() -> dict[str, Any]:
    merged = merge_includes(read_stack(ROOT, "aicloud-eks").raw, ROOT)
    raw = {k: v for k, v in copy.deepcopy(merged.raw).items() if k != "include"}
    pools = raw["pools"]
    pools["h100-a"].update(nodes=4096, topology={"domains": [512, 64, 8], "nodesPerDomain": 8})
    pools["h100-b"].update(minNodes=0, maxNodes=4096, topology={"domains": [512, 64, 8], "nodesPerDomain": 8})
    pools["l40s"].update(minNodes=0, maxNodes=1808)
    template = raw["models"]["qwen3-32b"]
    gang = raw["models"]["deepseek-v3"]
    raw["models"] = {}
    for tenant in (t for t, c in raw["tenants"].items() if c.get("namespaces") != []):
        queue = raw["tenants"][tenant]["queue"]
        queue["capability"] = {"nvidia.com/gpu": 100_000}
        queue.pop("deserved", None)
        queue.pop("byType", None)
        for index in range(MODELS_PER_TENANT):
            pick = index % 5
            model = copy.deepcopy(gang if pick == 4 else template)
            model["tenant"] = tenant
            model["pools"] = [["h100-a", "h100-b", "l40s", "l40s"][pick % 4]] if pick < 4 else ["h100-a", "h100-b"]
            model["replicas"] = 2
            model.pop("autoscaling", None)
            if pick == 4:
                model["topology"] = {"mode": "hard", "highestTier": 1}
            else:
                model["resources"] = {"gpus": 1 if pick >= 2 else 2, "cpu": 8, "memory": "48Gi"}
                model["engine"] = {"tensorParallelSize": model["resources"]["gpus"]}
            raw["models"][f"{tenant}-m{index}"] = model
    raw["tenants"]["research"]["queue"]["capability"] = {"nvidia.com/gpu": 1_000_000}
    return raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    raw = pools_stack()
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        spec = config.load_raw(copy.deepcopy(raw), "bench-pools")
        times.append(time.perf_counter() - start)
    nodes = sum(count for _, count in spec.topology.capacity) if spec.topology else 0
    print(
        json.dumps(
            {
                "nodes": nodes,
                "models": len(spec.models),
                "domains": len(spec.topology.domains) if spec.topology else 0,
                "validate_s": round(statistics.median(times), 3),
                "warnings": len(spec.warnings),
                "repeat": args.repeat,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
