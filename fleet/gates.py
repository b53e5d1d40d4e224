"""The gates a stack of the fleet passes: before `up`, the commands a platform engineer runs by hand
(offline `check`; `preflight` and the what-if on the cluster as it is right now), and after `up`,
the stack's own workloads read back from the cluster.

Each gate before `up` runs the project's own command in a process of its own, as a user would, and
reads its exit code and `--json`: what the gate says is what the command says. The cluster is the
one the stack deploys to: its `cluster.kubeconfig` (a path, or the file's contents) and
`cluster.context` (an encrypted one decrypted by the CLI), else the ambient kubeconfig.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from components.inference.gang_reason import ClusterAccess
from config import ConfigError
from config.loader import load_raw
from config.stack_file.reader import SECRET_PLACEHOLDER, StackFileError, read_stack
from fleet.fleet_file import Fleet

COMMAND_TIMEOUT_SECONDS = 1800
PROJECT_DIR = Path(__file__).resolve().parents[1]


@dataclass
class GateResult:
    gate: str
    passed: bool
    said: str
    """What the gate found, in one line."""
    fix: str = ""
    overridden: bool = False
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Target:
    """One stack of the fleet: its file, its cluster and the queues the fleet protects in it."""

    stack: str
    stack_file: Path
    access: ClusterAccess
    protected_queues: frozenset[str] = frozenset()
    needs_decrypted_kubeconfig: bool = False
    """`cluster.kubeconfig` is encrypted in the stack file: only the CLI can decrypt it."""

    @classmethod
    def of(cls, fleet: Fleet, stack: str) -> Target:
        """The stack's cluster access and protected queues from its config; a config that does not
        load leaves both empty (the `check` gate then says why)."""
        path = fleet.stack_file(stack)
        try:
            spec = load_raw(read_stack(fleet.project, stack, path).raw, stack, base_dir=fleet.project)
        except (ConfigError, StackFileError):
            return cls(stack, path, ClusterAccess())
        cluster = spec.config.cluster
        kubeconfig = cluster.kubeconfig.get_secret_value() if cluster.kubeconfig is not None else None
        protected = set(fleet.gates.protected_tenants)
        queues = set()
        for name, tenant in spec.tenants.items():
            line = [name]
            while tenant.parent is not None and tenant.parent in spec.tenants:
                line.append(tenant.parent)
                tenant = spec.tenants[tenant.parent]
            if protected.intersection(line):
                queues.add(spec.tenants[name].queue_name)
        encrypted = kubeconfig == SECRET_PLACEHOLDER
        access = ClusterAccess(None if encrypted else kubeconfig, cluster.context)
        return cls(stack, path, access, frozenset(queues), encrypted)

    def with_kubeconfig(self, kubeconfig: str) -> Target:
        """This target on the cluster of `kubeconfig` (a path, or a kubeconfig's contents)."""
        return replace(self, access=ClusterAccess(kubeconfig, self.access.context), needs_decrypted_kubeconfig=False)


def _run_tool(args: list[str], timeout: float = COMMAND_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """The project's command; one that outlives `timeout` is a failed gate, said as such."""
    command = [sys.executable, "-m", "cli", *args]
    try:
        return subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", f"error: `{args[0]}` took over {timeout:g} s")


def _first_error(output: str) -> str:
    """The first error line (`error: ...`, or the first problem of an invalid config)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = next((line for line in lines if line.startswith(("error", "- "))), lines[-1] if lines else "no output")
    return said[:600]


def check_gate(target: Target) -> GateResult:
    done = _run_tool(["check", "--stack", target.stack, "--config-file", str(target.stack_file)])
    if done.returncode == 0:
        return GateResult("check", True, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "passed")
    return GateResult("check", False, _first_error(done.stdout + done.stderr),
                      f"volcano-platform check --stack {target.stack}: fix what it lists")  # fmt: skip


def cluster_command(command: str, target: Target, where: list[str] | None = None) -> tuple[Any, str]:
    """`<command> --json` of the stack on its cluster (or on `where`, such as `--from <dump>`):
    its JSON, or None and why the command gave none."""
    with target.access.kubectl_args() as cluster:
        args = [command, "--stack", target.stack, "--config-file", str(target.stack_file)]
        done = _run_tool([*args, *(cluster if where is None else where), "--json"])
    if done.returncode not in (0, 1):
        return None, _first_error(done.stderr or done.stdout)
    return json.loads(done.stdout), ""


def preflight_gate(target: Target) -> GateResult:
    document, why = cluster_command("preflight", target)
    if document is None:
        return GateResult("preflight", False, why, "make the stack's cluster readable")
    return judge_preflight(document["findings"])


def judge_preflight(findings: list[dict[str, Any]]) -> GateResult:
    """`preflight --json`'s findings: any error fails the gate (warnings are counted)."""
    errors = [f for f in findings if f["severity"] == "error"]
    warnings = len(findings) - len(errors)
    if not errors:
        return GateResult("preflight", True, f"no error ({warnings} warning(s))")
    first = errors[0]
    return GateResult("preflight", False, f"{len(errors)} error(s): {first['check']} {first['subject']}: "
                      f"{first['message']}"[:600], first["fix"])  # fmt: skip


def whatif_gate(target: Target) -> GateResult:
    """No model that can never be placed, and nothing of a protected tenant evicted."""
    document, why = cluster_command("whatif", target)
    if document is None:
        return GateResult("whatif", False, why, "make the stack's cluster readable")
    return judge_whatif(document["models"], target.protected_queues, target.stack)


def judge_whatif(models: list[dict[str, Any]], protected_queues: frozenset[str], stack: str) -> GateResult:
    """`whatif --json`'s verdicts: a model that can never be placed, or a victim in a protected
    queue, fails the gate."""
    never = [m for m in models if m["verdict"] == "never"]
    if never:
        return GateResult("whatif", False, f"{never[0]['model']} can never be placed: {never[0]['reason']}"[:600],
                          f"volcano-platform explain {never[0]['model']} --stack {stack}")  # fmt: skip
    evicted = [(m["model"], v) for m in models for v in m["victims"] if v["queue"] in protected_queues]
    if evicted:
        model, victim = evicted[0]
        return GateResult(
            "whatif",
            False,
            f"{model} would {victim['action']} PodGroup {victim['namespace']}/{victim['podGroup']} of protected "
            f"queue {victim['queue']} ({len(evicted)} PodGroup(s) of protected tenants in all)",
            f"make room for {model} elsewhere, or `fleet up --override whatif` where the fleet file allows it",
        )
    counts = {
        verdict: sum(m["verdict"] == verdict for m in models) for verdict in ("fits", "fits-after-eviction", "waits")
    }
    return GateResult("whatif", True, ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n) or "no model")


BEFORE_UP: dict[str, Callable[[Target], GateResult]] = {
    "check": check_gate,
    "preflight": preflight_gate,
    "whatif": whatif_gate,
}


def timed(gate: Callable[[], GateResult]) -> GateResult:
    started = time.perf_counter()
    result = gate()
    result.seconds = round(time.perf_counter() - started, 1)
    return result
