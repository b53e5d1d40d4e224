"""The tenant-isolation program: NetworkPolicy and Pod Security answers from the upstream engines
(`tenant-isolation/`: cyclonus' NetworkPolicy matcher, Kubernetes' pod-security-admission).

    .venv/bin/python -m offline.isolation.engine [--if-go]    # `make tenant-isolation`: build (or find) it
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from offline.programs.build import GoProgram

PROGRAM = GoProgram("tenant-isolation", make_target="tenant-isolation")
RUN_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class Answers:
    flows: dict[str, dict[str, bool]]
    """Flow name -> `allowed`, `ingress`, `egress`."""
    pods: dict[str, list[str]]
    """Pod name -> the Pod Security checks it fails (empty: it passes its level)."""


def evaluate(
    namespaces: Mapping[str, Mapping[str, str]],
    policies: Sequence[Mapping[str, Any]],
    flows: Sequence[Mapping[str, Any]] = (),
    pods: Sequence[Mapping[str, Any]] = (),
) -> Answers:
    """Run the program once over a question set (builds it first if needed)."""
    binary = PROGRAM.ensure_built()
    question = {"namespaces": namespaces, "networkPolicies": list(policies), "flows": list(flows), "pods": list(pods)}
    result = subprocess.run(
        [str(binary)],
        input=json.dumps(question),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise ValueError(f"tenant-isolation exited {result.returncode}: {result.stderr.strip()}")
    answer = json.loads(result.stdout)
    return Answers(
        {f["name"]: {k: f[k] for k in ("allowed", "ingress", "egress")} for f in answer["flows"]},
        {p["name"]: list(p["reasons"]) for p in answer["pods"]},
    )


def main(argv: list[str]) -> int:
    return PROGRAM.command(argv, "Go is not installed: tenant-isolation is not built")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
