"""Scale benchmark: the program's own cost against the Pulumi SDK's floor.

For each size it generates a synthetic stack (a 3-tier topology, hierarchical tenant queues, a mix
of single- and multi-node models) and measures, in one process:

  validate_s  config load + validation + placement feasibility (`config.load_raw`)
  program_s   the whole program under the offline engine (`__main__.py`, mock runtime), as
              `python -m offline render` runs it
  floor_s     the same engine replaying the program's registrations (same types, URNs, parents,
              dependencies, providers, options and inputs) through pulumi-kubernetes' generated
              classes, with no program logic and no tuning: what any Pulumi program registering
              these resources pays
  ratio       program_s / floor_s
  host_s      a fresh process running the program once and exiting normally, as Pulumi's
              language host does (from the start of the run until the process is gone)
  peak_rss_mb peak resident memory of a fresh process running the program once

Usage:  python bench/scale.py --size large [--repeat 3]
        python bench/scale.py --size all --repeat 3 --profile 25 --results bench/results.md [--before FILE]
Prints one JSON line per size (then the example cluster's end-to-end figures, the profile and the
load average when writing --results); with --results, writes the Markdown report. Sizes run in
separate processes when several are asked for, so memory peaks do not mix.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import inspect
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pulumi  # noqa: E402
import pulumi_kubernetes as k8s  # noqa: E402
from pulumi.runtime import resource as sdk_resource  # noqa: E402
from pulumi.runtime.proto import source_pb2  # noqa: E402

import config  # noqa: E402
from offline import engine  # noqa: E402
from offline.engine import Registration, RunResult, run_callable, run_program  # noqa: E402
from offline.stackfile import StackFile  # noqa: E402


@dataclass(frozen=True)
class Size:
    name: str
    zones: int
    spines_per_zone: int
    leaves_per_spine: int
    nodes_per_leaf: int
    orgs: int
    teams_per_org: int
    models: int

    @property
    def nodes(self) -> int:
        return self.zones * self.spines_per_zone * self.leaves_per_spine * self.nodes_per_leaf

    @property
    def tenants(self) -> int:
        return self.orgs * (1 + self.teams_per_org)


SIZES = {
    "small": Size("small", 1, 2, 4, 16, 1, 3, 10),
    "large": Size("large", 2, 5, 10, 20, 10, 4, 200),
    "huge": Size("huge", 5, 10, 10, 20, 40, 4, 1000),
}
GPU = "nvidia.com/gpu"
TARGETS = {
    "ratio": 1.0,
    "growth": 1.15,
    "validate_s_huge": 0.5,
    "peak_rss_mb_huge": 1024,
    "render_vs_imports": 3.0,
    "check_vs_render": 2.0,
    "diff_own_s": 1.0,
}


def synthetic_stack(size: Size) -> dict[str, Any]:
    """A stack of the given size that passes every check (so the whole program runs)."""
    domains: dict[str, Any] = {}
    for z in range(size.zones):
        spines: dict[str, Any] = {}
        for s in range(size.spines_per_zone):
            leaves: dict[str, Any] = {}
            for leaf in range(size.leaves_per_spine):
                name = f"z{z}-s{s}-l{leaf}"
                nodes = f"gpu-{name}-[1-{size.nodes_per_leaf}]"
                # Every fifth leaf has 4-GPU nodes: the inventory is uneven, as real clusters are.
                leaves[name] = {"nodes": [nodes], "gpusPerNode": 4 if leaf % 5 == 4 else 8}
            spines[f"z{z}-s{s}"] = {"domains": leaves}
        domains[f"z{z}"] = {"domains": spines}
    total_gpus = size.nodes * 8
    org_share = total_gpus // (2 * size.orgs)
    tenants: dict[str, Any] = {}
    teams: list[str] = []
    for o in range(size.orgs):
        org = f"org-{o}"
        tenants[org] = {
            "namespaces": [],
            "queue": {"weight": 1 + o % 3, "capability": {GPU: total_gpus}, "deserved": {GPU: org_share}},
        }
        for t in range(size.teams_per_org):
            team = f"{org}-team-{t}"
            teams.append(team)
            tenants[team] = {
                "queue": {
                    "parent": org,
                    "capability": {GPU: total_gpus},
                    "deserved": {GPU: org_share // size.teams_per_org},
                    "reclaimable": t % 2 == 0,
                }
            }
    models: dict[str, Any] = {}
    for m in range(size.models):
        team = teams[m % len(teams)]
        if m % 5 == 0:
            node_count = 2 + m % 3
            models[f"multi-{m}"] = {
                "tenant": team,
                "nodesPerReplica": node_count,
                "replicas": 1 + m % 2,
                "resources": {"gpus": 8, "cpu": 32, "memory": "256Gi", "devices": {"rdma/hca": 1}},
                "engine": {"tensorParallelSize": 8, "pipelineParallelSize": node_count},
                "topology": [{"mode": "hard", "highestTier": 1}, {"mode": "hard", "highestTier": 2}, {"mode": "soft"}][
                    m % 3
                ],
                "source": {"model": f"model-{m}"},
            }
        else:
            gpus = [1, 1, 2, 4][m % 4]
            models[f"single-{m}"] = {
                "tenant": team,
                "replicas": 1 + m % 3,
                "resources": {"gpus": gpus, "cpu": 4 * gpus, "memory": f"{32 * gpus}Gi"},
                "source": {"model": f"model-{m}"},
                "engine": {"maxModelLen": 8192},
            }
    return {
        "cluster": {"name": f"bench-{size.name}", "gpusPerNode": 8, "extendedResources": ["rdma/hca"]},
        "topology": {
            "tiers": ["bench.example.com/leaf", "bench.example.com/spine", "bench.example.com/zone"],
            "hyperNodes": "explicit",
            "domains": domains,
        },
        "tenants": tenants,
        "modelDefaults": {
            "image": "vllm/vllm-openai:v0.33.0",
            "priorityClass": "p2-normal",
            "shmSizeGi": 8,
            "source": {"pvc": {"claimName": "models"}, "mountPath": "/models"},
            "env": {"NCCL_SOCKET_IFNAME": "net1"},
        },
        "models": models,
    }


def stack_file(size: Size, raw: dict[str, Any]) -> StackFile:
    return StackFile(
        stack=f"bench-{size.name}",
        path=None,
        raw=raw,
        pulumi_config={f"volcano-platform:{k}": json.dumps(v) for k, v in raw.items()},
    )


# -- the SDK floor -------------------------------------------------------------------------------

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _kwargs(inputs: dict[str, Any], skip: tuple[str, ...] = ("apiVersion", "kind")) -> dict[str, Any]:
    return {_SNAKE.sub("_", key).lower(): value for key, value in inputs.items() if key not in skip}


def _typed_class(token: str) -> Any:
    """`kubernetes:apps/v1:Deployment` -> pulumi_kubernetes.apps.v1.Deployment."""
    _, module, kind = token.split(":")
    group, version = module.split("/")
    return getattr(getattr(getattr(k8s, group.split(".")[0]), version), kind)


def _aliases(reg: Registration) -> list[pulumi.Alias]:
    """The aliases the program declared (a component's earlier type, a resource's earlier name);
    the ones the SDK derives for children are derived again by the replay."""
    out = []
    for described in reg.aliases:
        parts = dict(part.split("=", 1) for part in described.split(",") if "=" in part)
        if set(parts) - {"name", "type"} or not parts:
            continue
        out.append(pulumi.Alias(**{"type_" if key == "type" else key: value for key, value in parts.items()}))
    return out


def floor_program(registrations: list[Registration]) -> dict[str, Any]:
    """Register the same resources with the same URNs, parents, dependencies, providers and
    options, from their recorded inputs: the program's tree, without its configuration,
    validation, builders or composition logic (and without tuning anything)."""
    by_urn = {reg.urn: reg for reg in registrations}
    created: dict[str, pulumi.Resource] = {}

    def make(urn: str) -> pulumi.Resource | None:
        if urn in created or urn not in by_urn:
            return created.get(urn)
        reg = by_urn[urn]
        parent = make(reg.parent)
        depends = [r for r in (make(u) for u in reg.dependencies) if r is not None]
        provider = make(reg.provider.rpartition("::")[0]) if reg.provider else None
        assert provider is None or isinstance(provider, pulumi.ProviderResource)
        opts = pulumi.ResourceOptions(
            parent=parent,
            depends_on=depends or None,
            provider=provider,
            protect=reg.protect,
            retain_on_delete=reg.retain_on_delete or None,
            delete_before_replace=reg.delete_before_replace,
            replace_on_changes=reg.replace_on_changes or None,
            custom_timeouts=pulumi.CustomTimeouts(**reg.custom_timeouts) if reg.custom_timeouts else None,
            import_=reg.import_id or None,
            aliases=_aliases(reg) or None,
        )
        created[urn] = register_generated(reg, opts)
        return created[urn]

    for reg in registrations:
        make(reg.urn)
    return {}


def register_generated(reg: Registration, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    """One recorded registration, registered again through pulumi-kubernetes' generated classes
    (or `apiextensions.CustomResource`), as a program is usually written."""
    token = reg.type
    if not reg.custom:
        return pulumi.ComponentResource(token, reg.name, None, opts)
    if token == "pulumi:providers:kubernetes":
        accepted = inspect.signature(k8s.ProviderArgs.__init__).parameters
        return k8s.Provider(reg.name, **{k: v for k, v in _kwargs(reg.inputs).items() if k in accepted}, opts=opts)
    if token == "kubernetes:helm.sh/v3:Release":
        return k8s.helm.v3.Release(reg.name, **_kwargs(reg.inputs, ("compat",)), opts=opts)
    if token.startswith(
        ("kubernetes:core/", "kubernetes:apps/", "kubernetes:scheduling.k8s.io/", "kubernetes:autoscaling/")
    ):
        return _typed_class(token)(reg.name, **_kwargs(reg.inputs), opts=opts)
    custom = k8s.apiextensions.CustomResourcePatch if token.endswith("Patch") else k8s.apiextensions.CustomResource
    return custom(
        reg.name,
        api_version=reg.inputs["apiVersion"],
        kind=reg.inputs["kind"],
        metadata=reg.inputs.get("metadata"),
        spec=reg.inputs.get("spec"),
        opts=opts,
    )


# -- measurement ---------------------------------------------------------------------------------


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _kind(reg: Registration) -> str:
    if not reg.custom:
        return "(component)"
    if reg.type.startswith("pulumi:providers:"):
        return "(provider)"
    return str(reg.inputs.get("kind") or reg.type.rsplit(":", 1)[-1]) + ("Patch" if reg.type.endswith("Patch") else "")


def measure(size: Size, repeat: int) -> dict[str, Any]:
    raw = synthetic_stack(size)
    stack = stack_file(size, raw)
    validate, program, floor = [], [], []
    registrations: list[Registration] = []
    for _ in range(repeat):
        seconds, _spec = _timed(lambda: config.load_raw(raw, stack.stack))
        validate.append(seconds)
        seconds, run = _program_run(stack)
        if run.config_error is not None or run.duplicates:
            raise SystemExit(f"the synthetic {size.name} stack is invalid:\n{run.config_error}")
        program.append(seconds)
        registrations = run.registrations
        seconds, _ = _timed(lambda regs=registrations: run_callable(stack, lambda: floor_program(regs)))
        floor.append(seconds)
    kinds = Counter(_kind(r) for r in registrations)
    program_s, floor_s = statistics.median(program), statistics.median(floor)
    return {
        "size": size.name,
        "nodes": size.nodes,
        "models": size.models,
        "tenants": size.tenants,
        "resources": len(registrations),
        "validate_s": round(statistics.median(validate), 3),
        "program_s": round(program_s, 3),
        "floor_s": round(floor_s, 3),
        "ratio": round(program_s / floor_s, 3),
        "program_ms_per_resource": round(1000 * program_s / len(registrations), 3),
        "host_s": round(host_s := host_seconds(size, repeat), 3),
        "host_ms_per_resource": round(1000 * host_s / len(registrations), 3),
        "peak_rss_mb": _in_fresh_process("--program-rss", size.name)["peak_rss_mb"],
        "repeat": repeat,
        "by_kind": dict(sorted(kinds.items())),
    }


def _program_run(stack: StackFile) -> tuple[float, RunResult]:
    """One timed run of the program as `python -m offline render` runs it: the collector is off
    before, during and after the run (the program turns it off itself; the command line never
    turns it on, and ends with `os._exit`). What the run leaves is collected afterwards, untimed,
    to keep this process small; left to the next allocation, that collection would land in the
    measured run."""
    gc.disable()
    try:
        return _timed(lambda: run_program(ROOT, stack))
    finally:
        gc.enable()
        gc.collect()


@contextlib.contextmanager
def _stack_capture_skipped() -> Iterator[None]:
    """The offline engine's shortcuts without its clean-up: nothing restores what the program sets
    for the collector in the language host."""
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    yield


def host_run(size: Size) -> NoReturn:
    """The program as Pulumi's language host runs it, in this fresh process: one run, then a normal
    exit (CPython's last collection included). Prints the time the run starts; the parent times the
    rest, until the process is gone. The SDK's stack capture is skipped, as in the other figures."""
    stack = stack_file(size, synthetic_stack(size))
    engine._engine_only_shortcuts = _stack_capture_skipped
    print(time.time(), flush=True)
    run_program(ROOT, stack)
    sys.exit(0)


def host_seconds(size: Size, repeat: int) -> float:
    """Median of `repeat` language-host runs (`host_run`), each in its own process."""
    runs = []
    for _ in range(repeat):
        args = [sys.executable, __file__, "--host-run", size.name]
        started = float(subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()[0])
        runs.append(time.time() - started)
    return statistics.median(runs)


def program_peak_rss_mb(size: Size) -> float:
    """Peak memory of a process that loads, checks and runs the program once (as `pulumi preview`
    runs it), without the floor's runs."""
    stack = stack_file(size, synthetic_stack(size))
    run_program(ROOT, stack)
    return _peak_rss_mb()


def _peak_rss_mb() -> float:
    """This process's peak resident memory. Linux's `VmHWM` belongs to the process image; the
    `ru_maxrss` of getrusage() carries over from the parent across fork and exec, so a small
    process started by a large one would report the large one's peak."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _median_seconds(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 3)


def example_figures(repeat: int) -> dict[str, Any]:
    """End to end, as a user runs them, on the example cluster, interleaved in one run so that
    load affects all alike: the import baseline, `render`, `check`, and `diff` of two renders
    against the CLI's own start-up (`--help`, which imports what `diff` imports)."""
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "old", Path(tmp) / "new"
        for out in (old, new):
            subprocess.run(
                [python, "-m", "offline", "render", "--stack", "aicloud-a", "--out", str(out)],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        baseline = _median_seconds([python, "-c", "import pulumi, pulumi_kubernetes, pydantic, yaml"], repeat)
        render = _median_seconds([python, "-m", "offline", "render", "--stack", "aicloud-a", "--out", str(new)], repeat)
        check = _median_seconds([python, "-m", "offline", "check", "--stack", "aicloud-a"], repeat)
        cli = _median_seconds([python, "-m", "offline", "--help"], repeat)
        diff = _median_seconds([python, "-m", "offline", "diff", str(old), str(new)], repeat)
    return {
        "import_baseline_s": baseline,
        "render_s": render,
        "render_vs_imports": round(render / baseline, 2),
        "check_s": check,
        "check_vs_render": round(check / render, 2),
        "cli_start_s": cli,
        "diff_s": diff,
        "diff_own_s": round(diff - cli, 3),
        "repeat": repeat,
    }


WRAPPERS = ("asyncio/", "runpy", "offline/engine.py", "sync_await.py", "mocks.py", "Context' objects", "builtins.exec")


def profile_summary(size: Size, top: int) -> dict[str, Any]:
    """Where one program run at `size` spends its time, under cProfile (which slows Python code
    down; the shares are what matter): the top functions by cumulative time past the engine's and
    the event loop's wrappers, the top by own time, and the share of the program's own modules."""
    import cProfile
    import pstats

    raw = synthetic_stack(size)
    stack = stack_file(size, raw)
    profiler = cProfile.Profile()
    gc.disable()  # as in _program_run
    profiler.runcall(run_program, ROOT, stack)
    stats = pstats.Stats(profiler)
    rows = []
    total = own_code = 0.0
    for (filename, line, function), (_, _, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = filename.replace(str(ROOT) + "/", "").split("site-packages/")[-1].split("lib/python3.11/")[-1]
        rows.append((f"{where}:{line}({function})", round(cumulative, 2), round(own, 2)))
        total += own
        if where.startswith(("config/", "components/", "__main__")):
            own_code += own
    cumulative = [r for r in sorted(rows, key=lambda r: -r[1]) if not any(w in r[0] for w in WRAPPERS)][:top]
    by_own = sorted(rows, key=lambda r: -r[2])[: max(top // 2, 5)]
    return {
        "cumulative": cumulative,
        "own": by_own,
        "program_share": round(own_code / total, 3),
        "total_s": round(total, 1),
    }


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def results_markdown(
    rows: list[dict[str, Any]],
    example: dict[str, Any],
    load: tuple[str, str],
    profile: dict[str, Any],
    before: list[dict[str, Any]],
) -> str:
    by_size = {row["size"]: row for row in rows}
    lines = [
        "# Scale benchmark results",
        "",
        f"Measured with `python bench/scale.py --size all --repeat {rows[0]['repeat']} --profile N --results "
        f"bench/results.md` on {platform.machine()} / Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; load average (1, 5, 15 min) {load[0]} at the start, {load[1]} at the end. "
        "Times are medians of the repeats; `peak_rss_mb` is the peak of a fresh process that runs the program "
        "once, as `pulumi preview` does.",
        "",
        "`floor_s` replays the program's registrations through the same SDK and engine: the same resource "
        "types, URNs, parents, dependencies, providers, options and inputs, registered through "
        "pulumi-kubernetes' generated classes as a program is usually written, with none of the program's "
        "configuration, validation, builders or composition, and no tuning (what any Pulumi program "
        "registering these resources pays). `validate_s` is the program's own work (config load, checks, "
        "placement feasibility). Both runs skip the SDK's per-resource stack capture, which only the real "
        "engine reads. The program's run is timed as `python -m offline render` runs it: the collector off, "
        "what the run leaves freed afterwards, untimed (the command ends without freeing it). `host_s` is the "
        "program as Pulumi's language host runs it: a fresh process, one run, then a normal exit, timed until "
        "the process is gone.",
        "",
        "| size | nodes | models | tenants | resources | validate_s | program_s | floor_s | ratio | ms/resource "
        "| host_s | host ms/resource | peak_rss_mb |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['size']} | {row['nodes']} | {row['models']} | {row['tenants']} | {row['resources']} | "
            f"{row['validate_s']} | {row['program_s']} | {row['floor_s']} | {row['ratio']} | "
            f"{row['program_ms_per_resource']} | {row['host_s']} | {row['host_ms_per_resource']} | "
            f"{row['peak_rss_mb']} |"
        )
    lines += ["", "Resources by kind:", ""]
    for row in rows:
        lines.append(f"- {row['size']}: " + ", ".join(f"{k} {v}" for k, v in row["by_kind"].items()))
    lines += [
        "",
        f"The example cluster (`aicloud-a`), end to end as a user runs it (medians of {example['repeat']}):",
        "",
        "| measure | seconds |",
        "|---|---|",
        f'| `python -c "import pulumi, pulumi_kubernetes, pydantic, yaml"` | {example["import_baseline_s"]} |',
        f"| `python -m offline render --stack aicloud-a` | {example['render_s']} |",
        f"| `python -m offline check --stack aicloud-a` | {example['check_s']} |",
        f"| `python -m offline --help` (the CLI's start-up) | {example['cli_start_s']} |",
        f"| `python -m offline diff <render> <render>` | {example['diff_s']} |",
    ]
    lines += ["", "## Against the targets", "", "| target | measured | met |", "|---|---|---|"]

    def check(label: str, measured: str, met: bool) -> None:
        lines.append(f"| {label} | {measured} | {'yes' if met else 'NO'} |")

    for name in ("large", "huge"):
        if name in by_size:
            ratio = by_size[name]["ratio"]
            check(f"program/floor at {name} <= {TARGETS['ratio']}", str(ratio), ratio <= TARGETS["ratio"])
    if "large" in by_size and "huge" in by_size:
        growth = by_size["huge"]["program_ms_per_resource"] / by_size["large"]["program_ms_per_resource"]
        check(
            f"ms/resource at huge within {TARGETS['growth']}x of large", f"{growth:.2f}x", growth <= TARGETS["growth"]
        )
    if "huge" in by_size:
        huge = by_size["huge"]
        check(
            f"validation + feasibility at huge < {TARGETS['validate_s_huge']} s",
            f"{huge['validate_s']} s",
            huge["validate_s"] < TARGETS["validate_s_huge"],
        )
        check(
            f"peak RSS at huge < {TARGETS['peak_rss_mb_huge']} MiB",
            f"{huge['peak_rss_mb']} MiB",
            huge["peak_rss_mb"] < TARGETS["peak_rss_mb_huge"],
        )
    check(
        f"example render <= {TARGETS['render_vs_imports']}x the import baseline",
        f"{example['render_vs_imports']}x",
        example["render_vs_imports"] <= TARGETS["render_vs_imports"],
    )
    check(
        f"example check <= {TARGETS['check_vs_render']}x its render",
        f"{example['check_vs_render']}x",
        example["check_vs_render"] <= TARGETS["check_vs_render"],
    )
    check(
        f"diff of two renders <= {TARGETS['diff_own_s']} s beyond the CLI's start-up",
        f"{example['diff_own_s']} s",
        example["diff_own_s"] <= TARGETS["diff_own_s"],
    )
    if any(line.endswith("| NO |") for line in lines):
        lines += [
            "",
            "Targets marked NO, and what stands in the way, are discussed in docs/decisions.md (Speed).",
        ]
    if before:
        lines += [
            "",
            "## Before this round",
            "",
            "The same sizes at the previous release of the program. Its floor registered the resources flatly, "
            "so only `program_s`, `validate_s` and ms/resource compare; its `peak_rss_mb` was the peak of the "
            "process that also ran the floor.",
            "",
            "| size | validate_s | program_s | ms/resource | peak_rss_mb |",
            "|---|---|---|---|---|",
        ]
        for row in before:
            lines.append(
                f"| {row['size']} | {row['validate_s']} | {row['program_s']} | {row['program_ms_per_resource']} | "
                f"{row['peak_rss_mb']} |"
            )
    if profile:
        lines += [
            "",
            f"## Where the program's time goes at {SIZES['huge'].nodes} nodes",
            "",
            f"One program run under cProfile ({profile['total_s']} s under the profiler, which slows Python code "
            "down; the shares are what matter). The program's own modules (`config/`, `components/`, "
            f"`__main__.py`) take {100 * profile['program_share']:.1f}% of the time; the rest is the SDK "
            "registering resources (serialising inputs, resolving outputs) and the event loop.",
            "",
            "Top functions by cumulative time, past the engine's and the event loop's wrappers:",
            "",
            "| function | cumulative s | own s |",
            "|---|---|---|",
        ]
        lines += [f"| `{name}` | {cumulative} | {own} |" for name, cumulative, own in profile["cumulative"]]
        lines += ["", "Top functions by own time:", "", "| function | cumulative s | own s |", "|---|---|---|"]
        lines += [f"| `{name}` | {cumulative} | {own} |" for name, cumulative, own in profile["own"]]
    return "\n".join(lines) + "\n"


def _in_fresh_process(*args: str) -> dict[str, Any]:
    """Run this script with `args` in a new process (memory peaks and imports do not mix); its last
    output line is JSON."""
    output = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="large", choices=[*SIZES, "all"])
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; medians are reported")
    parser.add_argument("--results", help="write the Markdown report here (with the example cluster's figures)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="add the top N functions at huge")
    parser.add_argument("--before", help="JSON lines of an earlier release's sizes, shown beside these")
    parser.add_argument("--from-lines", help="rebuild --results from JSON lines saved earlier, without measuring")
    parser.add_argument("--profile-only", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--program-rss", choices=SIZES, help=argparse.SUPPRESS)
    parser.add_argument("--host-run", choices=SIZES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.host_run:
        host_run(SIZES[args.host_run])
    if args.program_rss:
        print(json.dumps({"peak_rss_mb": program_peak_rss_mb(SIZES[args.program_rss])}))
        return 0
    if args.profile_only:
        print(json.dumps({"profile": profile_summary(SIZES["huge"], args.profile_only)}))
        return 0
    before = [json.loads(x) for x in Path(args.before).read_text().splitlines() if x.strip()] if args.before else []
    if args.from_lines:  # rebuild the report from the lines a run printed
        saved = [json.loads(x) for x in Path(args.from_lines).read_text().splitlines() if x.strip()]
        extra = {k: v for x in saved for k, v in x.items() if k in ("example", "profile", "load")}
        if args.results:
            sizes = [x for x in saved if "size" in x]
            report = results_markdown(sizes, extra["example"], tuple(extra["load"]), extra.get("profile", {}), before)
            Path(args.results).write_text(report)
        return 0
    names = list(SIZES) if args.size == "all" else [args.size]
    start_load = load_average()
    rows = []
    for name in names:
        fresh = len(names) > 1 or args.results
        row = (
            _in_fresh_process("--size", name, "--repeat", str(args.repeat))
            if fresh
            else measure(SIZES[name], args.repeat)
        )
        rows.append(row)
        print(json.dumps(row), flush=True)
    if not args.results:
        return 0
    example = example_figures(max(args.repeat, 3))
    print(json.dumps({"example": example}), flush=True)
    profile = _in_fresh_process("--profile-only", str(args.profile))["profile"] if args.profile else {}
    if profile:
        print(json.dumps({"profile": profile}), flush=True)
    load = (start_load, load_average())
    print(json.dumps({"load": load}), flush=True)
    Path(args.results).write_text(results_markdown(rows, example, load, profile, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
