"""The stack of 1,000 KWOK nodes and 100 models, applied for real: `bench/synthetic.py`'s 3-tier
cluster at that size, each model's weights from the hub (no volume to bind), and the fake nodes
its topology names.

`run` starts the cluster, applies the stack, previews it, and returns the times and the API
server's memory; the end-to-end test asserts on it and `bench/real_up.py` records it.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from bench.synthetic import Size, synthetic_stack
from cli.preview_report import report
from sandbox.cluster import LocalCluster
from sandbox.pulumi_cli import PulumiStack

SIZE = Size(
    "e2e", zones=1, spines_per_zone=5, leaves_per_spine=10, nodes_per_leaf=20, orgs=5, teams_per_org=4, models=100
)
GPU = "nvidia.com/gpu"
EDITED_TENANT = "org-0"


def scale_config(kubeconfig: Path) -> dict[str, Any]:
    raw = synthetic_stack(SIZE)
    raw["cluster"]["kubeconfig"] = str(kubeconfig)
    raw["volcano"] = {"install": False}
    raw["lws"] = {"install": False}
    del raw["modelDefaults"]["source"]
    for name, model in raw["models"].items():
        model["source"] = {"hub": {"id": f"example/{name}"}}
    return raw


def scale_nodes() -> list[dict[str, Any]]:
    nodes = []
    for s in range(SIZE.spines_per_zone):
        for leaf in range(SIZE.leaves_per_spine):
            gpus = 4 if leaf % 5 == 4 else 8
            for i in range(1, SIZE.nodes_per_leaf + 1):
                name = f"gpu-z0-s{s}-l{leaf}-{i}"
                allocatable = {"cpu": "128", "memory": "2Ti", "pods": "110", GPU: str(gpus), "rdma/hca": "1"}
                nodes.append(
                    {
                        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                        "status": {"allocatable": allocatable},
                    }
                )
    return nodes


def rss_mb(cluster: LocalCluster, name: str) -> float:
    process = next(p for p in cluster.processes if p.name == name)
    for line in Path(f"/proc/{process.popen.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(folder: Path, programs: dict[str, Path], measure_text: bool = False) -> dict[str, Any]:
    """The figures of one run; `measure_text` also times the `--refresh --diff` text preview the
    pull requests' comment was once made of (for the benchmark)."""
    cluster = LocalCluster(folder, programs)
    figures: dict[str, Any] = {"nodes": SIZE.nodes, "models": SIZE.models}
    try:
        started = time.perf_counter()
        cluster.start(scale_nodes())
        figures["cluster_start_s"] = round(time.perf_counter() - started, 1)
        stack = PulumiStack.create(folder / "project", "e2escale", scale_config(cluster.kubeconfig), programs)
        started = time.perf_counter()
        up = stack.up()
        figures["up_s"] = round(time.perf_counter() - started, 1)
        figures["resources"] = _created(up.output)
        started = time.perf_counter()
        preview = stack.preview("--expect-no-changes", check=False)
        figures["preview_s"] = round(time.perf_counter() - started, 1)
        figures["preview_clean"] = preview.returncode == 0
        figures["preview_tail"] = preview.output[-3000:] if preview.returncode else ""
        figures.update(_day_two(stack, cluster, measure_text))
        figures["apiserver_peak_rss_mb"] = round(rss_mb(cluster, "kube-apiserver"))
        figures["etcd_peak_rss_mb"] = round(rss_mb(cluster, "etcd"))
        figures["scheduler_peak_rss_mb"] = round(rss_mb(cluster, "vc-scheduler"))
        started = time.perf_counter()
        with contextlib.suppress(TimeoutError):  # what does not run is counted below
            cluster.wait_for(lambda: _all_running(cluster), 300, "every pod of the models to run")
        figures["all_pods_running_after_preview_s"] = round(time.perf_counter() - started, 1)
        pods = cluster.get_json("pods", "-A")["items"]
        figures["pods_running"] = sum(1 for p in pods if p["status"].get("phase") == "Running")
        figures["pods"] = len(pods)
    finally:
        cluster.stop()
    return figures


def _day_two(stack: PulumiStack, cluster: LocalCluster, measure_text: bool) -> dict[str, Any]:
    """What every pull request's preview runs (`--refresh`, its JSON made into the comment by
    `cli.preview_report`), then a one-line edit (a queue's weight) applied with `up --refresh`."""
    figures: dict[str, Any] = {}
    args = ("preview", "--refresh", "--non-interactive", "--json")
    started = time.perf_counter()
    preview = stack.program_command(*args)
    figures["preview_refresh_json_s"] = round(time.perf_counter() - started, 1)
    figures["preview_json_bytes"] = len(preview.stdout.encode())
    figures["comment_bytes_unchanged"] = len(report(json.loads(preview.stdout)).encode())
    if measure_text:
        started = time.perf_counter()
        text = stack.preview("--refresh")
        figures["preview_refresh_diff_s"] = round(time.perf_counter() - started, 1)
        figures["preview_refresh_diff_bytes"] = len(text.output.encode())
    edited = scale_config(cluster.kubeconfig)
    edited["tenants"][EDITED_TENANT]["queue"]["weight"] = 3
    stack.write_config(edited)
    changed = report(json.loads(stack.program_command(*args).stdout))
    figures["comment_first_line_after_edit"] = changed.splitlines()[0]
    figures["comment_bytes_after_edit"] = len(changed.encode())
    figures["comment_after_edit"] = changed[:4000]
    started = time.perf_counter()
    stack.program_command("up", "--yes", "--skip-preview", "--refresh", "--non-interactive")
    figures["small_edit_up_refresh_s"] = round(time.perf_counter() - started, 1)
    figures["edit_applied"] = cluster.get_json("queues.scheduling.volcano.sh", EDITED_TENANT)["spec"]["weight"] == 3
    return figures


def _all_running(cluster: LocalCluster) -> bool:
    """Every pod Running (a LeaderWorkerSet is `Available` once its groups are ready; the
    pods Volcano still places after that are counted here)."""
    pods = cluster.get_json("pods", "-A")["items"]
    return bool(pods) and all(p["status"].get("phase") == "Running" for p in pods)


def _created(output: str) -> int:
    """The `N created` count of `pulumi up`'s summary."""
    for line in output.splitlines():
        words = line.strip().removeprefix("+").split()
        if len(words) == 2 and words[1] == "created" and words[0].isdigit():
            return int(words[0])
    return 0
