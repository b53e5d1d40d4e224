"""The benchmark's Markdown report (bench/results.md): figures per size against their targets, the
example cluster's commands and a profile at 10,000 nodes."""

from __future__ import annotations

import os
import platform
from typing import Any

from bench.synthetic import SIZES

TARGETS = {
    "ratio": 1.0,
    "growth": 1.15,
    "validate_s_huge": 0.5,
    "peak_rss_mb_huge": 1024,
    "render_vs_imports": 3.0,
    "check_vs_render": 2.0,
    "diff_own_s": 1.0,
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
        "engine reads. The program's run is timed as `volcano-platform render` runs it: the collector off, "
        "what the run leaves freed afterwards, untimed (the command ends without freeing it). `host_s` is the "
        "program as Pulumi's language host runs it: the stack written as a project folder (`--write-stack`: a "
        "small stack file, the topology and one file per tenant under `include`), its config handed to a fresh "
        "process in `PULUMI_CONFIG` as the language host hands it, one run, then a normal exit, timed until the "
        "process is gone; `config_kib` is that variable (Linux allows 128 KiB).",
        "",
        "| size | nodes | models | tenants | resources | validate_s | program_s | floor_s | ratio | ms/resource "
        "| host_s | host ms/resource | config_kib | peak_rss_mb |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['size']} | {row['nodes']} | {row['models']} | {row['tenants']} | {row['resources']} | "
            f"{row['validate_s']} | {row['program_s']} | {row['floor_s']} | {row['ratio']} | "
            f"{row['program_ms_per_resource']} | {row['host_s']} | {row['host_ms_per_resource']} | "
            f"{row.get('config_kib', '-')} | {row['peak_rss_mb']} |"
        )
    lines += ["", "Resources by kind:", ""]
    for row in rows:
        lines.append(f"- {row['size']}: " + ", ".join(f"{k} {v}" for k, v in row["by_kind"].items()))
    modes = example.get("label_modes")
    if modes:
        lines += [
            "",
            "Node labels at huge (10,000 nodes), the stack rendered from its project folder: labelled by the stack "
            "(a NodePatch per node) or by provisioning (`topology.nodeLabels.enabled: false`, nothing per node):",
            "",
            "| node labels | resources | resources.yaml KiB |",
            "|---|---|---|",
            *(f"| {mode} | {m['resources']} | {m['resources_yaml_kib']} |" for mode, m in modes.items()),
        ]
    lines += [
        "",
        f"The example cluster (`aicloud-a`), end to end as a user runs it (medians of {example['repeat']}):",
        "",
        "| measure | seconds |",
        "|---|---|",
        f'| `python -c "import pulumi, pulumi_kubernetes, pydantic, yaml"` | {example["import_baseline_s"]} |',
        f"| `volcano-platform render --stack aicloud-a` | {example['render_s']} |",
        f"| `volcano-platform check --stack aicloud-a` | {example['check_s']} |",
        f"| `volcano-platform --help` (the CLI's start-up) | {example['cli_start_s']} |",
        f"| `volcano-platform diff <render> <render>` | {example['diff_s']} |",
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
