"""`volcano-platform fleet preview|up|status|whatif --fleet <file>`: the stacks of a fleet file rolled
out in waves through Pulumi's Automation API, each behind its gates, and which of their clusters can
take a model (`fleet/`)."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from cli.exit import FOUND, OK, UsageError

FLEET_HELP = "the fleet file: the stacks in waves, and the gates (`fleet.yaml`; see docs/operations.md)"


def cmd_fleet(args: argparse.Namespace) -> int:
    from fleet.fleet_file import read_fleet

    fleet = read_fleet(Path(args.fleet))
    if args.action == "whatif":
        return _whatif(args, fleet)
    if args.action == "workflow":
        return _workflow(args, fleet)
    if shutil.which("pulumi") is None:
        raise UsageError("the Pulumi CLI is not on the PATH: the fleet runs it through the Automation API")
    if args.action == "status":
        return _status(args, fleet)
    return _roll_out(args, fleet)


def _roll_out(args: argparse.Namespace, fleet: Any) -> int:
    from fleet.report import as_json, markdown
    from fleet.rollout import Options, roll_out

    overrides = tuple(dict.fromkeys(getattr(args, "override", None) or ()))
    refused = [gate for gate in overrides if gate not in fleet.gates.overridable]
    if refused:
        allowed = ", ".join(fleet.gates.overridable) or "none"
        raise UsageError(
            f"--override {refused[0]}: the fleet file does not let this gate be overridden (gates.overridable: "
            f"{allowed}); add it there in a reviewed change if it must be"
        )
    unknown = [stack for stack in args.stack or () if stack not in fleet.stacks]
    if unknown:
        raise UsageError(f"--stack {unknown[0]}: not a stack of the fleet ({', '.join(fleet.stacks)})")
    packs = tuple(str(Path(pack).resolve()) for pack in args.policy_pack or ())
    missing = [pack for pack in packs if not Path(pack).exists()]
    if missing:
        raise UsageError(f"--policy-pack {missing[0]}: no such policy pack (the project's is `policy`)")
    options = Options(overrides, packs, tuple(args.stack or ()))
    run = roll_out(fleet, args.action, options)
    print(as_json(run) if args.json else markdown(run), end="")
    return OK if run.ok else FOUND


def _workflow(args: argparse.Namespace, fleet: Any) -> int:
    from importlib.metadata import version

    from fleet.workflow import deploy_workflow

    if Path(args.fleet).is_absolute():
        raise UsageError(f"--fleet {args.fleet}: give the fleet file relative to the repository's root, where the "
                         "workflow reads it")  # fmt: skip
    print(deploy_workflow(fleet, args.fleet, version("pulumi")), end="")
    return OK


def _status(args: argparse.Namespace, fleet: Any) -> int:
    from fleet import automation
    from fleet.report import status_markdown

    rows = []
    for stack in fleet.stacks:
        try:
            row = automation.last_update(stack, fleet.project)
        except automation.StackStepError as error:
            row = {"kind": None, "result": f"unreadable: {error}", "ended": None, "message": None, "changes": {},
                   "resources": 0}  # fmt: skip
        rows.append({"stack": stack, "wave": fleet.wave_of(stack), **row})
    if args.json:
        print(json.dumps({"schemaVersion": 1, "action": "status", "stacks": rows}, indent=2))
    else:
        print(status_markdown(rows), end="")
    return OK


def _whatif(args: argparse.Namespace, fleet: Any) -> int:
    from fleet import placement

    dumps: dict[str, Path] = {}
    for given in args.from_files or ():
        stack, _, file = given.partition("=")
        if stack not in fleet.stacks or not file:
            raise UsageError(f"--from {given!r}: write <stack>=<snapshot file>, with a stack of the fleet "
                             f"({', '.join(fleet.stacks)})")  # fmt: skip
        dumps[stack] = Path(file)
    answers = placement.place(fleet, args.model, dumps)
    unanswered = [a for a in answers if a.verdict == placement.UNANSWERED]
    if unanswered:
        # As `whatif`: an unreadable snapshot or cluster is bad input, said with the stack it is for.
        raise UsageError("; ".join(f"stack {a.stack}: {a.error}" for a in unanswered))
    if all(a.verdict == placement.NOT_IN_STACK for a in answers):
        raise UsageError(f"no stack of the fleet has a model {args.model!r}: add it to the stacks it may run on")
    print(placement.as_json(args.model, answers) if args.json else placement.markdown(args.model, answers), end="")
    return OK if answers[0].verdict == "fits" else FOUND


def add_fleet_command(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    from cli.render_commands import command_parser

    parser = command_parser(
        sub,
        formatter,
        "fleet",
        "roll a fleet of stacks out in waves, each behind its gates (Pulumi's Automation API and the Pulumi CLI)",
        "Per stack, in the fleet file's wave order: the gates before `up` (offline `check`; `preflight` and the "
        "what-if on the stack's cluster as it is now: no error, no model that can never be placed, nothing of a "
        "protected tenant evicted), then `up` (or `preview`), then the gate after `up` (every Deployment, "
        "LeaderWorkerSet and PodGroup of the stack serving or scheduled). A failed stack stops the fleet after its "
        "wave; later waves are left untouched. Progress goes to standard error, the table (or --json) to standard "
        "output. The CLI uses the environment's backend and credentials, as `pulumi up` by hand does.",
        "volcano-platform fleet preview --fleet fleet.yaml",
        "volcano-platform fleet up --fleet fleet.yaml",
        "volcano-platform fleet up --fleet fleet.yaml --override whatif",
        "volcano-platform fleet status --fleet fleet.yaml --json",
        "volcano-platform fleet whatif --fleet fleet.yaml --model llama-405b --from lab=lab.json",
        "volcano-platform fleet workflow --fleet fleet.yaml > .github/workflows/deploy.yml",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="action")
    for action, summary in (
        ("preview", "every stack's gates and `pulumi preview --refresh`; changes nothing"),
        ("up", "wave by wave: the gates, `pulumi up --refresh`, the gate after it; stops after a failed wave"),
        ("status", "each stack's last update (result, time, message) and resource count"),
        ("whatif", "which cluster can take a model: each stack's what-if on its cluster, ranked"),
        ("workflow", "print the deploy workflow of the fleet: a GitHub Actions job per wave, in order"),
    ):
        command = actions.add_parser(action, help=summary, description=summary)
        command.add_argument("--fleet", required=True, help=FLEET_HELP)
        if action != "workflow":
            command.add_argument("--json", action="store_true", help="print the report as JSON")
        if action in ("preview", "up"):
            command.add_argument(
                "--stack",
                action="append",
                help="only this stack of the fleet, in its wave (the deploy workflow runs one per leg); repeatable",
            )
            command.add_argument(
                "--policy-pack",
                action="append",
                metavar="FOLDER",
                help="run this policy pack with `preview`/`up`, as `pulumi --policy-pack` does (the project's "
                "is `policy`); repeatable",
            )
        if action == "up":
            command.add_argument(
                "--override",
                action="append",
                choices=("preflight", "whatif", "workloads"),
                help="pass this gate even when it fails (only gates the fleet file's `gates.overridable` lists; "
                "recorded in the report and the update's message); repeatable",
            )
        if action == "whatif":
            command.add_argument("--model", required=True, help="the model, as the stacks that may run it name it")
            command.add_argument(
                "--from",
                dest="from_files",
                action="append",
                metavar="STACK=FILE",
                help="answer this stack on a recorded snapshot instead of its live cluster; repeatable",
            )
        command.set_defaults(handler=cmd_fleet)
