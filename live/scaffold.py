"""A new cluster's stack, written as a team keeps one: a small stack file, the cluster's pools and
topology in an include file, one file per tenant, CODEOWNERS lines and the next steps.

From answers alone it is the smallest stack that checks clean. From a recorded cluster it also
carries what the cluster says: the GPU resource most accelerator nodes offer, the pools by node
group with their fabric's shape (`live.pool_import`), or for a cluster labelled by hand its named
domains (`live.topology_import`), and a Volcano or LWS already running, which the stack then leaves
installed where it is (`install: false`: the stack owns the scheduler policy, not the release).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.kubernetes.yaml_text import dump
from config.upstream.accelerators import VENDORS
from config.upstream.cloud_topology import PRESETS
from live.cluster_state import ClusterState
from live.pool_import import group_label, import_pools
from live.topology_import import import_topology

PLATFORM_TEAM = "gpu-platform"
VOLCANO_DEPLOYMENT = "volcano-scheduler"
LWS_DEPLOYMENT = "lws-controller-manager"


@dataclass
class Answers:
    stack: str
    tenants: tuple[str, ...] = ("team-a",)
    gpu_resource: str | None = None
    preset: str | None = None
    tiers: tuple[str, ...] = ()
    owners: str = "your-org"
    """The GitHub organisation of the CODEOWNERS lines (`@<owners>/<team>`)."""


@dataclass
class Scaffold:
    files: dict[str, str] = field(default_factory=dict)
    """Path relative to the project directory -> content."""
    codeowners: list[str] = field(default_factory=list)
    """Lines for `.github/CODEOWNERS`."""
    notes: list[str] = field(default_factory=list)
    """What the cluster said that the files reflect (or could not)."""


def _schema_line(depth: int, include: bool) -> str:
    name = "pulumi-stack-include.schema.json" if include else "pulumi-stack.schema.json"
    return f"# yaml-language-server: $schema={'../' * depth or './'}schema/{name}\n"


def _gpu_resource(state: ClusterState | None, answers: Answers) -> str:
    if answers.gpu_resource:
        return answers.gpu_resource
    if state is None:
        return "nvidia.com/gpu"
    domains = {domain for vendor in VENDORS.values() for domain in vendor.resource_domains}
    offered: Counter[str] = Counter()
    for node in state.nodes:
        for name, value in ((node.get("status") or {}).get("allocatable") or {}).items():
            if name.split("/")[0] in domains and str(value) not in ("0", ""):
                offered[name] += 1
    return offered.most_common(1)[0][0] if offered else "nvidia.com/gpu"


def _accelerators(state: ClusterState | None, resource: str) -> int:
    """The accelerators the recorded nodes offer; 0 without a recording."""
    if state is None:
        return 0
    total = 0
    for node in state.nodes:
        value = str(((node.get("status") or {}).get("allocatable") or {}).get(resource, "0"))
        total += int(value) if value.isdigit() else 0
    return total


def _shares(tenants: Sequence[str], accelerators: int, resource: str) -> dict[str, Any]:
    """Each tenant's queue: an equal deserved share of the accelerators and at most all of them,
    for the platform team to change; the weight alone where the accelerators are not known."""
    if not accelerators:
        return {tenant: {"queue": {"weight": 1}} for tenant in tenants}
    share = accelerators // max(len(tenants), 1)  # together never more than there are
    return {
        tenant: {"queue": {"weight": 1, "capability": {resource: accelerators}, "deserved": {resource: share}}}
        for tenant in tenants
    }


def _pool_grants(tenants: Sequence[str], pools: dict[str, Any]) -> dict[str, Any]:
    """Every pool named in each tenant's grant (`tenantPolicy.tenants.<t>.pools`), so keeping a
    team off a pool (batch off the H100s) is deleting a line of the platform's file."""
    if not pools or not tenants:
        return {}
    return {"tenantPolicy": {"tenants": {tenant: {"pools": sorted(pools)} for tenant in tenants}}}


def _running(state: ClusterState | None, name: str) -> bool:
    return state is not None and any((d.get("metadata") or {}).get("name") == name for d in state.deployments)


def scaffold(answers: Answers, state: ClusterState | None) -> Scaffold:
    out = Scaffold()
    name = answers.stack
    folder = f"clusters/{name}"
    resource = _gpu_resource(state, answers)
    tiers = list(answers.tiers or (PRESETS[answers.preset].tiers if answers.preset else ()))
    cluster_files: dict[str, Any] = {}
    if state is not None:
        label = group_label(state.nodes, resource)
        if label is not None:
            pools = import_pools(state.nodes, tiers, resource, {}, label)
            cluster_files["pools"] = pools.pools
            out.notes += pools.notes
            out.notes.append(f"{len(pools.pools)} pool(s), one per `{label}`")
        elif tiers:
            topology = import_topology(state.nodes, tiers, resource)
            cluster_files["topology"] = {"hyperNodes": "discovery", **topology.section}
            out.notes += topology.problems
        if tiers and "pools" in cluster_files:
            section: dict[str, Any] = {"preset": answers.preset} if answers.preset else {"tiers": tiers}
            cluster_files["topology"] = {**section, "hyperNodes": "discovery"}
    config: dict[str, Any] = {}
    quotas = f"{folder}/quotas.yaml"
    include: dict[str, Any] = {"files": [quotas], "tenants": [f"{folder}/tenants/*.yaml"]}
    out.files[quotas] = (
        _schema_line(2, include=True)
        + f"# Each tenant's share of {name} and the pools its models may use, kept by the platform team: a\n"
        "# tenant's own file cannot change them (a key written here and in the tenant file is refused there).\n"
        + dump(
            {
                "tenants": _shares(answers.tenants, _accelerators(state, resource), resource),
                **_pool_grants(answers.tenants, cluster_files.get("pools") or {}),
            }
        )
    )
    if cluster_files:
        include = {**include, "files": [f"{folder}/cluster.yaml", quotas]}
        out.files[f"{folder}/cluster.yaml"] = (
            _schema_line(2, include=True)
            + f"# The nodes of {name} as the cluster labels them (`volcano-platform init`); reviewed by the platform\n"
            "# team. `import-topology --stack "
            + name
            + "` writes them again from a newer dump.\n"
            + dump(cluster_files)
        )
    config["volcano-platform:include"] = include
    # A new cluster's Helm records in ConfigMaps: the preview identity then lists no Secret.
    config["volcano-platform:cluster"] = {"name": name, "gpuResource": resource, "helmReleaseStorage": "configmap"}
    for deployment, key, what in ((VOLCANO_DEPLOYMENT, "volcano", "Volcano"), (LWS_DEPLOYMENT, "lws", "LWS")):
        if _running(state, deployment):
            config[f"volcano-platform:{key}"] = {"install": False}
            out.notes.append(
                f"{what} already runs (`{deployment}`): the stack leaves it installed where it is "
                f"(`{key}.install: false`)"
            )
    out.files[f"Pulumi.{name}.yaml"] = (
        _schema_line(0, include=False)
        + f"# Cluster {name}, written by `volcano-platform init`. Next steps: {folder}/README.md.\n"
        + dump({"config": config})
    )
    for tenant in answers.tenants:
        path = f"{folder}/tenants/{tenant}.yaml"
        out.files[path] = (
            _schema_line(3, include=True)
            + f"# Tenant `{tenant}` and its models (`include.tenants` of Pulumi.{name}.yaml); reviewed by its team.\n"
            f"# Its share of the cluster is in {quotas}, the platform team's; add models under `models:`.\n"
            + dump({"tenants": {tenant: {}}})
        )
        # The team alone: `tenantPolicy` in the stack file, enforced by the program, bounds the file.
        out.codeowners.append(f"/{path} @{answers.owners}/{tenant}")
    out.codeowners.insert(0, f"/Pulumi.{name}.yaml @{answers.owners}/{PLATFORM_TEAM}")
    out.codeowners.insert(1, f"/{quotas} @{answers.owners}/{PLATFORM_TEAM}")
    if cluster_files:
        out.codeowners.insert(1, f"/{folder}/cluster.yaml @{answers.owners}/{PLATFORM_TEAM}")
    out.files[f"{folder}/README.md"] = _next_steps(name, folder)
    return out


def _next_steps(name: str, folder: str) -> str:
    return f"""# Cluster `{name}`: next steps

Written by `volcano-platform init`. `docs/operations.md` has the whole walkthrough.

1. Create the stack: `pulumi stack init {name}`. Its secrets manager decides how secrets are set:
   a passphrase (`PULUMI_CONFIG_PASSPHRASE`, the stack file gets `encryptionsalt`), a cloud KMS
   (`pulumi stack init {name} --secrets-provider awskms://...`) or Pulumi Cloud. Set each secret
   with `pulumi config set --secret --path 'secrets.<name>' <value>`; `check` refuses a `secure:`
   value no secrets manager wrote.
2. Who changes what: the platform team sets each tenant's share in `{folder}/quotas.yaml`
   (`queue.capability`, `deserved`, `byType` per GPU type), which a tenant file cannot change; each
   team writes its models (and its gateway settings) in `{folder}/tenants/<tenant>.yaml` and
   reviews that file alone (the CODEOWNERS lines `init` printed). What a tenant file may use beyond
   the defaults (the top priority class, secrets, registries) is granted in `tenantPolicy`, and
   the pools its models may run on are listed there in `{folder}/quotas.yaml` (delete a pool to
   keep a team off it); the program refuses the rest.
3. Check offline: `make check STACK={name}`, `make render STACK={name}` (`out/{name}/summary.md`).
4. Meet the cluster, read-only: `make preflight STACK={name}`, then
   `.venv/bin/volcano-platform whatif --stack {name}`.
5. Apply: `pulumi preview --policy-pack policy`, then `pulumi up`.
"""
