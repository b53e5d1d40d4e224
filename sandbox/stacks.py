"""A stack of the project pointed at a sandbox: its config with the included files merged in,
Volcano and LWS installed elsewhere (the sandbox runs them as processes, with the stack's own
scheduler policy), and the sandbox's kubeconfig."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from config.stack_file.includes import INCLUDE_KEY, merge_includes


def merged_config(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A stack's keys (without the project prefix) with its included files merged in and
    `include` dropped, so the config can be written anywhere. Raises ValueError on a file that
    cannot be read (the stack's own check names it)."""
    merged = merge_includes(raw, folder)
    if merged.problems:
        raise ValueError("; ".join(str(p) for p in merged.problems))
    return {k: v for k, v in copy.deepcopy(merged.raw).items() if k != INCLUDE_KEY}


def sandbox_config(raw: dict[str, Any], kubeconfig: Path) -> dict[str, Any]:
    """`raw` (merged) for the sandbox at `kubeconfig`: the charts not installed (their processes
    run in the sandbox; the scheduler policy is applied to the ConfigMap its scheduler reads), no
    `secrets` (encrypted for the stack's own key: set them anew on the sandbox's stack), and the
    sandbox's budgets for `up` to wait (`SANDBOX_BUDGETS`)."""
    out = copy.deepcopy(raw)
    cluster = out.setdefault("cluster", {})
    cluster.pop("context", None)
    cluster["kubeconfig"] = str(kubeconfig)
    volcano = {k: v for k, v in (out.get("volcano") or {}).items() if k in ("version", "scheduler")}
    out["volcano"] = {**volcano, "install": False}
    out["lws"] = {"install": False}
    out.pop("secrets", None)
    for holder in [out.setdefault("modelDefaults", {}), *(out.get("models") or {}).values()]:
        if holder is out["modelDefaults"] or "startup" in holder:
            holder["startup"] = {**(holder.get("startup") or {}), **SANDBOX_BUDGETS}
    return out


SANDBOX_BUDGETS = {"placeTimeoutSeconds": 120, "loadTimeoutSeconds": 60}
"""A sandbox's pods run the moment Volcano binds them (KWOK starts them; nothing loads), so
`pulumi up` waits two minutes for a model to be placed and one to "load": a gang the scheduler
cannot place fails the `up` within three minutes with its PodGroup's reason, where the stack's own
budgets would wait up to the half hour weights take to load."""
