"""What a failing end-to-end test prints about the cluster beside its processes' last lines: the
HyperNodes as the API server has them and what Volcano's processes logged about them."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sandbox.api import ApiError


def topology_report(get_json: Callable[[str], Any], logs: Iterable[tuple[str, Path]], count: int) -> list[str]:
    """The scheduler stops placing jobs with a topology while its HyperNode cache is not ready
    (`HyperNodesReadyToSchedule: false`): the HyperNodes, and the errors logged about them."""
    out = ["--- HyperNodes:"]
    try:
        for item in get_json("hypernodes.topology.volcano.sh")["items"]:
            spec = item["spec"]
            members = [m["selector"].get("exactMatch", {}).get("name", "?") for m in spec.get("members", [])]
            out.append(f"{item['metadata']['name']} tier {spec.get('tier')}: {len(members)} {members[:4]}")
    except (ApiError, OSError, subprocess.CalledProcessError, KeyError) as error:
        out.append(f"(not listed: {error})")
    for name, log in logs:
        if name in ("vc-scheduler", "vc-controller-manager"):
            lines = log.read_text(errors="replace").splitlines()
            about = [line for line in lines if "hypernode" in line.lower() and ("rror" in line or "parent" in line)]
            out.append(f"--- {name}, its last {min(count, len(about))} HyperNode errors:")
            out.extend(about[-count:])
    return out
