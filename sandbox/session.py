"""A sandbox of one stack: a local cluster of the stack's shape, kept running in the background,
and a Pulumi stack of the project pointed at it (`volcano-platform sandbox up|down|status|pulumi`).

Everything lives under `.sandbox/<stack>/` in the project (ignored by git): the cluster's files
and logs, the Pulumi state (a file backend, a fixed passphrase: nothing there is worth a secret),
and `project/Pulumi.<stack>-sandbox.yaml`, the stack's config with its included files merged in,
Volcano and LWS installed elsewhere (the sandbox runs them, and its scheduler reads the policy the
stack applies) and the sandbox's kubeconfig. Its `secrets` are set to placeholders, since the
stack's own are encrypted for another key.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.programs import PROJECT_DIR, programs
from sandbox.pulumi_cli import PulumiStack, Result
from sandbox.serve import NODES, READY
from sandbox.stacks import sandbox_config

SANDBOX_DIR_VARIABLE = "VOLCANO_PLATFORM_SANDBOX_DIR"
"""Where sandboxes live instead of `.sandbox/` in the project (the tests' temporary folders)."""
START_TIMEOUT_SECONDS = 300
PROGRAM_COMMANDS = ("up", "preview", "destroy", "refresh")
"""CLI commands that run the program (through the project's language runtime)."""


class SandboxError(Exception):
    """The sandbox could not be started or reached; the message says why and where to look."""


@dataclass(frozen=True)
class Sandbox:
    stack: str

    @property
    def folder(self) -> Path:
        return Path(os.environ.get(SANDBOX_DIR_VARIABLE) or PROJECT_DIR / ".sandbox") / self.stack

    @property
    def pulumi_stack_name(self) -> str:
        return f"{self.stack}-sandbox"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "cluster" / "kubeconfig"

    def pid(self) -> int | None:
        try:
            pid = int((self.folder / "serve.pid").read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def running(self) -> bool:
        return self.pid() is not None and (self.folder / READY).is_file()

    def up(self, config: dict[str, Any], nodes: list[dict[str, Any]], progress: Callable[[str], None]) -> PulumiStack:
        """Start the cluster (unless it runs) and (re)write the sandbox's stack from `config`
        (the stack's keys, includes merged)."""
        found = programs(progress)
        if not self.running():
            self._start(nodes, progress)
        stack = PulumiStack(self.folder / "project", self.pulumi_stack_name, found)
        settings = sandbox_config(config, self.kubeconfig)
        secrets = sorted(config.get("secrets") or {})
        if stack.stack_file.exists():
            stack.write_config(settings)
        else:
            progress(f"creating the Pulumi stack {self.pulumi_stack_name} (file backend under {self.folder})")
            stack = PulumiStack.create(stack.folder, stack.stack, settings, found, secrets)
        return stack

    def _start(self, nodes: list[dict[str, Any]], progress: Callable[[str], None]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / NODES).write_text(json.dumps(nodes))
        (self.folder / READY).unlink(missing_ok=True)
        progress(f"starting a cluster of {len(nodes)} node(s): etcd, kube-apiserver, KWOK, Volcano, LWS")
        log = self.folder / "serve.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "sandbox.serve", str(self.folder)],
                cwd=PROJECT_DIR,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.folder / "serve.pid").write_text(str(process.pid))
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not (self.folder / READY).is_file():
            if process.poll() is not None or time.monotonic() > deadline:
                if process.poll() is None:
                    process.terminate()
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
                raise SandboxError(f"the sandbox did not start (its log: {log}):\n{tail}")
            time.sleep(1)

    def down(self) -> bool:
        """Stop the cluster; False when none ran."""
        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while self.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.5)
        return True

    def pulumi(self, args: list[str]) -> Result:
        """The real Pulumi CLI (built with the sandbox) on the sandbox's stack."""
        if not self.running():
            raise SandboxError(f"no sandbox of `{self.stack}` runs; start it with `sandbox up --stack {self.stack}`")
        stack = PulumiStack(self.folder / "project", self.pulumi_stack_name, programs())
        if args and args[0] in PROGRAM_COMMANDS:
            return stack.program_command(*args, check=False)
        return stack.cli(*args, "--stack", self.pulumi_stack_name, check=False)
