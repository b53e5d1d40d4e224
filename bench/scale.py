"""Scale benchmark: the program's own cost against the Pulumi SDK's floor.

For each size it generates a synthetic stack (a 3-tier topology, hierarchical tenant queues, a mix
of single- and multi-node models) and measures, in one process:

  validate_s  config load + validation + placement feasibility (`config.load_raw`)
  program_s   the whole program under the offline engine (`__main__.py`, mock runtime), as
              `volcano-platform render` runs it
  floor_s     the same engine replaying the program's registrations (same types, URNs, parents,
              dependencies, providers, options and inputs) through pulumi-kubernetes' generated
              classes, with no program logic and no tuning: what any Pulumi program registering
              these resources pays
  ratio       program_s / floor_s
  host_s      a fresh process running the program once and exiting normally, as Pulumi's
              language host does (from the start of the run until the process is gone)
  peak_rss_mb peak resident memory of a fresh process running the program once

  config_kib  the stack file's config as the CLI hands it over (`PULUMI_CONFIG`), with the topology
              and the tenants in included files (`--write-stack`); Linux allows 128 KiB

Usage:  python bench/scale.py --size large [--repeat 3]
        python bench/scale.py --size huge --write-stack /tmp/huge   # then render it:
          volcano-platform render --stack bench-huge --config-file /tmp/huge/Pulumi.bench-huge.yaml
        python bench/scale.py --size all --repeat 3 --profile 25 --results bench/results.md [--before FILE]
Prints one JSON line per size (then the example cluster's end-to-end figures, the profile and the
load average when writing --results); with --results, writes the Markdown report. Sizes run in
separate processes when several are asked for, so memory peaks do not mix."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pulumi.runtime import resource as sdk_resource  # noqa: E402
from pulumi.runtime.proto import source_pb2  # noqa: E402

import config  # noqa: E402
from bench.floor import floor_program  # noqa: E402
from bench.report import load_average, results_markdown  # noqa: E402
from bench.stack_dir import ROOT, handover_environment, stack_from_environment, write_stack_dir  # noqa: E402
from bench.synthetic import SCALE_SIZES, SIZES, Size, synthetic_stack  # noqa: E402
from config.stack_file.reader import StackFile, read_stack  # noqa: E402
from offline import engine  # noqa: E402
from offline.engine import Registration, RunResult, run_callable, run_program  # noqa: E402

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
    with tempfile.TemporaryDirectory() as folder:
        return _measure(size, repeat, _kept_in_files(size, Path(folder)))


def _kept_in_files(size: Size, folder: Path) -> StackFile:
    """The stack as users keep one at this size: a small stack file whose includes hold the topology
    and the tenants (the whole config in one file is past the CLI's 128 KiB from `large` on, and
    the program refuses it as `pulumi preview` would fail on it)."""
    path = write_stack_dir(size, folder)
    return read_stack(ROOT, path.name.removeprefix("Pulumi.").removesuffix(".yaml"), path)


def _measure(size: Size, repeat: int, stack: StackFile) -> dict[str, Any]:
    raw = synthetic_stack(size)
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
        "host_s": round(host_s := (host := host_seconds(size, repeat))[0], 3),
        "config_kib": round(host[1] / 1024, 1),
        "host_ms_per_resource": round(1000 * host_s / len(registrations), 3),
        "peak_rss_mb": _in_fresh_process("--program-rss", size.name)["peak_rss_mb"],
        "repeat": repeat,
        "by_kind": dict(sorted(kinds.items())),
    }


def _program_run(stack: StackFile) -> tuple[float, RunResult]:
    """One timed run of the program as `volcano-platform render` runs it: the collector is off
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


def host_run(stack_path: Path) -> NoReturn:
    """The program as Pulumi's language host runs it, in this fresh process: the stack file's config
    from `PULUMI_CONFIG` (the included files read by the program), one run, then a normal exit
    (CPython's last collection included). Prints the time the run starts; the parent times the
    rest, until the process is gone. The SDK's stack capture is skipped, as in the other figures."""
    stack = stack_from_environment(stack_path)
    engine._engine_only_shortcuts = _stack_capture_skipped
    print(time.time(), flush=True)
    result = run_program(ROOT, stack)
    if result.config_error is not None:
        raise SystemExit(f"the written stack is invalid:\n{result.config_error}")
    sys.exit(0)


def host_seconds(size: Size, repeat: int) -> tuple[float, int]:
    """Median of `repeat` language-host runs (`host_run`), each in its own process, of the stack
    written as a project folder; and the bytes of the `PULUMI_CONFIG` entry they were handed."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="vp-bench-") as folder:
        stack_path = write_stack_dir(size, Path(folder))
        env, handed = handover_environment(stack_path)
        for _ in range(repeat):
            args = [sys.executable, __file__, "--host-run", str(stack_path)]
            # An environment past the limit fails here with E2BIG, as `pulumi preview` would.
            done = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
            runs.append(time.time() - float(done.stdout.split()[0]))
    return statistics.median(runs), handed


def label_modes(size: Size) -> dict[str, Any]:
    """Resources and the size of `resources.yaml` when the stack labels the nodes (a NodePatch per
    node) and when provisioning does (`topology.nodeLabels.enabled: false`), for the stack written
    as a project folder and rendered as users render it."""
    from offline.render import render_stack, write_render

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="vp-bench-") as folder:
        stack_path = write_stack_dir(size, Path(folder))
        topology = Path(folder) / "clusters" / f"bench-{size.name}" / "topology.yaml"
        for mode in ("patched", "unowned"):
            if mode == "unowned":
                topology.write_text(
                    topology.read_text().replace("topology:\n", "topology:\n  nodeLabels: {enabled: false}\n", 1)
                )
            result = render_stack(ROOT, f"bench-{size.name}", stack_path)
            write_render(result, Path(folder) / mode)
            out[mode] = {
                "resources": len(result.rendered.index),
                "resources_yaml_kib": round((Path(folder) / mode / "resources.yaml").stat().st_size / 1024, 1),
            }
    return out


def program_peak_rss_mb(size: Size) -> float:
    """Peak memory of a process that loads, checks and runs the program once (as `pulumi preview`
    runs it), without the floor's runs."""
    with tempfile.TemporaryDirectory() as folder:
        run_program(ROOT, _kept_in_files(size, Path(folder)))
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
                [python, "-m", "cli", "render", "--stack", "aicloud-a", "--out", str(out)],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
        baseline = _median_seconds([python, "-c", "import pulumi, pulumi_kubernetes, pydantic, yaml"], repeat)
        render = _median_seconds([python, "-m", "cli", "render", "--stack", "aicloud-a", "--out", str(new)], repeat)
        check = _median_seconds([python, "-m", "cli", "check", "--stack", "aicloud-a"], repeat)
        cli = _median_seconds([python, "-m", "cli", "--help"], repeat)
        diff = _median_seconds([python, "-m", "cli", "diff", str(old), str(new)], repeat)
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


def _in_fresh_process(*args: str) -> dict[str, Any]:
    """Run this script with `args` in a new process (memory peaks and imports do not mix); its last
    output line is JSON."""
    output = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


WRAPPERS = ("asyncio/", "runpy", "offline/engine.py", "sync_await.py", "mocks.py", "Context' objects", "builtins.exec")


def profile_summary(size: Size, top: int) -> dict[str, Any]:
    """Where one program run at `size` spends its time, under cProfile (which slows Python code
    down; the shares are what matter): the top functions by cumulative time past the engine's and
    the event loop's wrappers, the top by own time, and the share of the program's own modules."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as folder:
        stack = _kept_in_files(size, Path(folder))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="large", choices=[*SIZES, "all"], help="all: " + ", ".join(SCALE_SIZES))
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; medians are reported")
    parser.add_argument("--results", help="write the Markdown report here (with the example cluster's figures)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="add the top N functions at huge")
    parser.add_argument("--before", help="JSON lines of an earlier release's sizes, shown beside these")
    parser.add_argument("--from-lines", help="rebuild --results from JSON lines saved earlier, without measuring")
    parser.add_argument("--profile-only", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--program-rss", choices=SIZES, help=argparse.SUPPRESS)
    parser.add_argument("--label-modes", choices=SIZES, help=argparse.SUPPRESS)
    parser.add_argument("--write-stack", metavar="DIR", help="write the --size cluster as a project folder and stop")
    parser.add_argument("--host-run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.host_run:
        host_run(Path(args.host_run))
    if args.write_stack:
        if args.size == "all":
            parser.error("--write-stack writes one --size")
        path = write_stack_dir(SIZES[args.size], Path(args.write_stack))
        _, handed = handover_environment(path)
        print(json.dumps({"stack_file": str(path), "config_kib": round(handed / 1024, 1)}))
        return 0
    if args.label_modes:
        print(json.dumps({"label_modes": label_modes(SIZES[args.label_modes])}))
        return 0
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
    names = list(SCALE_SIZES) if args.size == "all" else [args.size]
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
    modes = _in_fresh_process("--label-modes", "huge")["label_modes"]
    print(json.dumps({"label_modes": modes}), flush=True)
    example = {**example, "label_modes": modes}
    profile = _in_fresh_process("--profile-only", str(args.profile))["profile"] if args.profile else {}
    if profile:
        print(json.dumps({"profile": profile}), flush=True)
    load = (start_load, load_average())
    print(json.dumps({"load": load}), flush=True)
    Path(args.results).write_text(results_markdown(rows, example, load, profile, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
