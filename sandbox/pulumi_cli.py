"""The real Pulumi CLI and Kubernetes provider, run on a stack of the project against the e2e
cluster, with a file backend and a passphrase (no network, no Pulumi Cloud).

Each command starts its own language runtime (`language_host.py`) for the CLI to run the program
through, so every `up` or `preview` runs the program in a fresh process, as the CLI's plugin does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from config.stack_file.includes import STACK_DIR_VARIABLE
from sandbox.programs import provider_version

PROJECT = Path(__file__).resolve().parents[1]
COMMAND_TIMEOUT_SECONDS = 1800


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class PulumiError(Exception):
    pass


POLICY_LAUNCHER = "volcano-platform-policy"


def write_policy_launcher(folder: Path) -> Path:
    """The project's policy pack as an executable analyzer, for `--policy-pack <this file>`. The CLI
    runs a pack folder through the Python language plugin (pulumi pkg/resource/plugin/
    analyzer_plugin.go, `NewPolicyAnalyzer`), which is not built here (its Go module is not served);
    an executable it starts itself with the engine's address, as it starts a provider. This one
    serves `policy/` with the project's Python through `pulumi.policy`, the SDK's own entry point
    of Python packs, as the language plugin would."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / POLICY_LAUNCHER
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -u -m pulumi.policy "$1" "{PROJECT / "policy"}"\n')
    path.chmod(0o755)
    return path


@dataclass
class PulumiStack:
    folder: Path
    """The project folder the CLI runs in: Pulumi.yaml and the stack's file(s)."""
    stack: str
    programs: dict[str, Path]

    @property
    def env(self) -> dict[str, str]:
        home = self.folder.parent / "pulumi-home"
        return {
            **os.environ,
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{self.folder.parent / 'pulumi-state'}",
            "PULUMI_CONFIG_PASSPHRASE": "volcano-platform-e2e",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            # The file backend rewrites the whole state after every step, quadratic in the stack's
            # size; the final state is what the tests read.
            "PULUMI_SKIP_CHECKPOINTS": "true",
            STACK_DIR_VARIABLE: str(self.folder),
            # The program's kubectl (what it reads when a gang does not start) is the cluster's own.
            "PATH": os.pathsep.join([str(self.programs["kubectl"].parent), os.environ.get("PATH", "")]),
        }

    @classmethod
    def create(
        cls, folder: Path, stack: str, config: dict[str, Any], programs: dict[str, Path], secrets: Sequence[str] = ()
    ) -> PulumiStack:
        """A project folder with the project's Pulumi.yaml and a stack file holding `config`
        (keys without the project prefix) and each of `secrets` set encrypted (`secrets.<name>`),
        a file backend, the provider installed from its built binary and the stack initialised."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder.parent / "pulumi-state").mkdir(exist_ok=True)
        shutil.copy(PROJECT / "Pulumi.yaml", folder / "Pulumi.yaml")
        made = cls(folder, stack, programs)
        made.write_config(config)
        made.cli("plugin", "install", "resource", "kubernetes", provider_version(), "--file",
                 str(programs["pulumi-resource-kubernetes"]))  # fmt: skip
        made.cli("stack", "init", stack)
        for name in secrets:
            made.cli("config", "set", "--stack", stack, "--secret", "--path", f"volcano-platform:secrets.{name}",
                     f"e2e-value-of-{name}")  # fmt: skip
        return made

    @property
    def stack_file(self) -> Path:
        return self.folder / f"Pulumi.{self.stack}.yaml"

    def write_config(self, config: dict[str, Any]) -> None:
        """The stack file's config becomes `config`; what the CLI wrote into it (the passphrase's
        salt, the encrypted `secrets`) stays."""
        document = yaml.safe_load(self.stack_file.read_text()) if self.stack_file.exists() else {}
        kept = {k: v for k, v in (document.get("config") or {}).items() if k == "volcano-platform:secrets"}
        document["config"] = {**{f"volcano-platform:{key}": value for key, value in config.items()}, **kept}
        self.stack_file.write_text(yaml.safe_dump(document, sort_keys=False))

    def cli(self, *args: str, check: bool = True, timeout: float = 300) -> Result:
        """A CLI command that runs no program."""
        return self._run([str(self.programs["pulumi"]), *args], check, timeout)

    def program_command(self, *args: str, check: bool = True, env: Mapping[str, str] | None = None) -> Result:
        """A CLI command that runs the program (`up`, `preview`, `destroy`, `refresh`), through a
        language runtime of its own; `env` is added to the CLI's environment."""
        host = subprocess.Popen(
            [sys.executable, "-m", "sandbox.language_host"],
            cwd=PROJECT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            text=True,
        )
        try:
            assert host.stdout is not None
            port = host.stdout.readline().strip()
            if not port.isdigit():
                raise PulumiError(f"the language runtime did not start (it printed {port!r})")
            command = [str(self.programs["pulumi"]), *args, "--stack", self.stack, f"--client=127.0.0.1:{port}"]
            return self._run(command, check, COMMAND_TIMEOUT_SECONDS, env)
        finally:
            assert host.stdin is not None
            host.stdin.close()
            host.wait(timeout=30)

    def up(self, check: bool = True) -> Result:
        return self.program_command("up", "--yes", "--skip-preview", "--non-interactive", "--diff", check=check)

    def preview(self, *extra: str, check: bool = True) -> Result:
        return self.program_command("preview", "--non-interactive", "--diff", *extra, check=check)

    @property
    def policy_pack(self) -> Path:
        """The project's policy pack, for `--policy-pack`."""
        return write_policy_launcher(self.folder.parent / "bin")

    def destroy(self, check: bool = True) -> Result:
        return self.program_command("destroy", "--yes", "--skip-preview", "--non-interactive", check=check)

    def _run(self, command: list[str], check: bool, timeout: float, env: Mapping[str, str] | None = None) -> Result:
        completed = subprocess.run(
            command,
            cwd=self.folder,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        result = Result(command, completed.returncode, completed.stdout, completed.stderr)
        if check and completed.returncode != 0:
            raise PulumiError(
                f"`pulumi {' '.join(command[1:3])}` exited {completed.returncode}:\n{result.output[-6000:]}"
            )
        return result
