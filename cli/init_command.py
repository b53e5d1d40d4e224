"""`init`: a new cluster's stack, written from answers or from a recorded cluster (`live.scaffold`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.exit import OK, UsageError, stack_name
from cli.render_commands import command_parser
from config.upstream.cloud_topology import PRESET_NAMES


def cmd_init(args: argparse.Namespace) -> int:
    from live.cluster_state import read_file
    from live.scaffold import Answers, scaffold

    directory = Path(args.dir)
    answers = Answers(
        stack=args.stack,
        tenants=tuple(args.tenant or ("team-a",)),
        gpu_resource=args.gpu_resource,
        preset=args.preset,
        tiers=tuple(t.strip() for t in (args.tiers or "").split(",") if t.strip()),
        owners=args.owners,
    )
    state = read_file(Path(args.from_file)) if args.from_file else None
    written = scaffold(answers, state)
    existing = [path for path in written.files if (directory / path).exists()]
    if existing:
        raise UsageError(f"{', '.join(existing)} exist already; init writes a new cluster's files only")
    for path, text in written.files.items():
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_text(text)
        print(f"wrote {path}")
    codeowners = directory / ".github" / "CODEOWNERS"
    present = codeowners.read_text().splitlines() if codeowners.exists() else []
    added = [line for line in written.codeowners if line not in present]
    if added:
        codeowners.parent.mkdir(parents=True, exist_ok=True)
        codeowners.write_text("\n".join([*present, *added]) + "\n")
        print(f"added {len(added)} line(s) to .github/CODEOWNERS")
    for note in written.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"next: clusters/{args.stack}/README.md")
    return OK


def add_init_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    init = command_parser(
        sub,
        formatter,
        "init",
        "write a new cluster's stack: the stack file, its pools and topology, a file per tenant, CODEOWNERS lines",
        "Write Pulumi.<stack>.yaml, clusters/<stack>/ (cluster.yaml from --from: the pools by node group with "
        "their fabric's shape, or a hand-labelled topology; tenants/<tenant>.yaml; README.md with the next "
        "steps) and the CODEOWNERS lines. What it writes passes `check` with no warning. Refuses to overwrite.",
        "volcano-platform init --stack lab --tenant vision --tenant search",
        "volcano-platform init --stack eks-prod --from cluster.json --preset aws",
    )
    init.add_argument("--stack", type=stack_name, required=True, help="the new stack's name")
    init.add_argument("--dir", default=".", help="the project directory to write into (default: here)")
    init.add_argument("--tenant", action="append", help="a tenant (repeat for more; default team-a)")
    init.add_argument(
        "--gpu-resource", help="the accelerators' resource name (default: from --from, else nvidia.com/gpu)"
    )
    init.add_argument("--preset", choices=sorted(PRESET_NAMES), help="the fabric's standard labels (`topology.preset`)")
    init.add_argument("--tiers", help="the fabric's tier label keys, tier 1 first, comma-separated")
    init.add_argument("--owners", default="your-org", help="GitHub organisation of the CODEOWNERS teams")
    init.add_argument("--from", dest="from_file", help="a recorded cluster (JSON or YAML List) to read")
    init.set_defaults(handler=cmd_init)
