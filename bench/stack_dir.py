"""A synthetic cluster written as users keep one: a project folder with a small stack file whose
`include` names a topology file and one file per tenant (`bench/scale.py --write-stack DIR`).

It is rendered the way users render, `volcano-platform render --stack <name> --config-file
DIR/Pulumi.<name>.yaml`, and the benchmark's language-host run hands the stack file's config to a
fresh process in `PULUMI_CONFIG`, as Pulumi's Python language host does, so a stack whose config
outgrows the environment limit fails in the benchmark as it would under `pulumi preview`."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from bench.synthetic import Size, synthetic_stack
from config.handover import handover_bytes
from config.stack_file.reader import StackFile, read_stack

ROOT = Path(__file__).resolve().parent.parent


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=120)


def write_stack_dir(size: Size, folder: Path) -> Path:
    """Write the synthetic stack of `size` into `folder`; returns the stack file's path."""
    raw = synthetic_stack(size)
    stack = f"bench-{size.name}"
    own = folder / "clusters" / stack
    (own / "tenants").mkdir(parents=True, exist_ok=True)
    (own / "topology.yaml").write_text(_dump({"topology": raw["topology"]}))
    models_of: dict[str, dict[str, Any]] = defaultdict(dict)
    for name, model in raw["models"].items():
        models_of[model["tenant"]][name] = {k: v for k, v in model.items() if k != "tenant"}
    # Grouping queues (no namespace of their own) are the platform's, in its file; each team's
    # queue sits under one, as the tenant boundary allows without a grant.
    grouping = {tenant: settings for tenant, settings in raw["tenants"].items() if settings.get("namespaces") == []}
    for tenant, settings in raw["tenants"].items():
        if tenant in grouping:
            continue
        content: dict[str, Any] = {"tenants": {tenant: settings}}
        if models_of[tenant]:
            content["models"] = models_of[tenant]
        (own / "tenants" / f"{tenant}.yaml").write_text(_dump(content))
    in_stack = {k: v for k, v in raw.items() if k not in ("topology", "tenants", "models")}
    in_stack["tenants"] = grouping
    # The platform's file holds the cluster-wide settings and the grants the teams' files use.
    in_stack["lws"] = {**in_stack.get("lws", {}), "install": True}
    volcano = in_stack.setdefault("volcano", {})
    volcano["scheduler"] = {**volcano.get("scheduler", {}), "eviction": "gang"}
    in_stack["tenantPolicy"] = {"default": {**in_stack["tenantPolicy"]["default"], "nonReclaimable": True}}
    in_stack["include"] = {
        "files": [f"clusters/{stack}/topology.yaml"],
        "tenants": [f"clusters/{stack}/tenants/*.yaml"],
    }
    config = {f"volcano-platform:{key}": value for key, value in in_stack.items()}
    path = folder / f"Pulumi.{stack}.yaml"
    path.write_text(_dump({"config": config}))
    return path


def handover_environment(stack_path: Path) -> tuple[dict[str, str], int]:
    """The environment the language host gives the program for this stack file, and the size of
    its `PULUMI_CONFIG` entry in bytes."""
    stack = read_stack(ROOT, stack_path.name.removeprefix("Pulumi.").removesuffix(".yaml"), stack_path)
    env = {
        **os.environ,
        "PULUMI_CONFIG": json.dumps(stack.pulumi_config, separators=(",", ":"), ensure_ascii=False),
        "PULUMI_CONFIG_SECRET_KEYS": json.dumps(sorted(stack.secret_keys)),
    }
    return env, handover_bytes(stack.pulumi_config)


def stack_from_environment(stack_path: Path) -> StackFile:
    """What the language host's executor gives the SDK: the config from `PULUMI_CONFIG`."""
    name = stack_path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    return StackFile(
        stack=name,
        path=stack_path,
        pulumi_config=json.loads(os.environ["PULUMI_CONFIG"]),
        secret_keys=set(json.loads(os.environ.get("PULUMI_CONFIG_SECRET_KEYS", "[]"))),
    )
