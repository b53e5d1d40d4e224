"""Tenant files cannot reach past their tenant: each attempt is refused at the tenant file's own
key, naming its file; the same stack with the grant in the platform's file passes. Cluster-wide
settings never follow a tenant file."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.errors import ConfigError
from config.loader import load_raw
from config.spec.platform import PlatformSpec
from config.spec.scheduler_conf import scheduler_actions
from config.stack_file.reader import read_stack
from tests.conftest import PROJECT_DIR

STACK = "aicloud-b"
TENANT_FILE = "clusters/aicloud-b/tenants/search.yaml"
REGISTRY = "registry.example.com"

Edit = Callable[[dict[str, Any]], None]


def _platform() -> dict[str, Any]:
    """The example's stack file, with a secret and a registry entry that belong to another team,
    and a default ceiling a tenant file can go past."""
    raw = copy.deepcopy(read_stack(PROJECT_DIR, STACK).raw)
    raw["secrets"] = {"chat-hf-token": "[secret]", "chat-registry-password": "[secret]"}
    raw["registries"] = {
        "chat-registry": {"server": REGISTRY, "username": "robot", "passwordSecret": "chat-registry-password"}
    }
    raw["tenantPolicy"] = {
        "default": {"maxCapability": {"nvidia.com/gpu": 128}, "maxDeserved": {"nvidia.com/gpu": 96}},
        "tenants": {
            "chat": {
                "priorityClasses": ["p0-critical", "p1-high", "p2-normal", "p3-low"],
                "consumers": ["search"],
                "maxCapability": {"nvidia.com/gpu": 160},
                "maxDeserved": {"nvidia.com/gpu": 128},
            }
        },
    }
    return raw


def _load(
    tmp_path: Path, edit: Edit, grant: dict[str, Any] | None = None, platform: Edit | None = None
) -> PlatformSpec:
    folder = tmp_path / "repo"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(PROJECT_DIR / "clusters" / "aicloud-b", folder / "clusters" / "aicloud-b")
    path = folder / TENANT_FILE
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    raw = _platform()
    if grant is not None:
        raw["tenantPolicy"]["tenants"]["search"] = grant
    if platform is not None:
        platform(raw)
    return load_raw(raw, STACK, encrypted=("secrets",), base_dir=folder)


def _queue(data: dict[str, Any]) -> dict[str, Any]:
    return data["tenants"]["search"]["queue"]


def _model(data: dict[str, Any]) -> dict[str, Any]:
    return data["models"]["bge-reranker"]


def _set(target: Callable[[dict[str, Any]], dict[str, Any]], **values: Any) -> Edit:
    return lambda data: target(data).update(values)


def _tenant(**values: Any) -> Edit:
    return lambda data: data["tenants"]["search"].update(values)


def _pod_security(data: dict[str, Any]) -> None:
    data["tenants"]["search"]["labels"] = {"pod-security.kubernetes.io/enforce": "privileged"}


def _env_secret(data: dict[str, Any]) -> None:
    _model(data)["env"] = {"HF_TOKEN": {"secret": "chat-hf-token"}}


def _hub_token(data: dict[str, Any]) -> None:
    _model(data)["source"]["hub"]["tokenSecret"] = "chat-hf-token"


def _pull_secret(data: dict[str, Any]) -> None:
    _model(data).update(image=f"{REGISTRY}/vllm/vllm-openai:v0.9.2", imagePullSecrets=["chat-registry"])


def _host_path(data: dict[str, Any]) -> None:
    _model(data)["volumes"] = {"node-root": {"mountPath": "/cache", "hostPath": "/data/cache"}}


def _privileged(**extra: Any) -> dict[str, Any]:
    return {"podSecurity": "privileged", **extra}


CASES: list[tuple[str, Edit, str, dict[str, Any]]] = [
    ("queue priority", _set(_queue, priority=100), "tenants.search.queue.priority", {"maxQueuePriority": 100}),
    ("a small queue priority", _set(_queue, priority=1), "tenants.search.queue.priority", {"maxQueuePriority": 1}),
    (
        "non-reclaimable queue",
        _set(_queue, reclaimable=False),
        "tenants.search.queue.reclaimable",
        {"nonReclaimable": True},
    ),
    (
        "a guarantee",
        _set(_queue, guarantee={"nvidia.com/gpu": 32}),
        "tenants.search.queue.guarantee[nvidia.com/gpu]",
        {"maxGuarantee": {"nvidia.com/gpu": 32}},
    ),
    (
        "a guarantee of another resource",
        _set(_queue, guarantee={"cpu": 64}, deserved={"nvidia.com/gpu": 64, "cpu": 64}),
        "tenants.search.queue.guarantee.cpu",
        {"maxGuarantee": {"cpu": 64}},
    ),
    (
        "a guarantee over its ceiling",
        _set(_queue, guarantee={"nvidia.com/gpu": 64}),
        "tenants.search.queue.guarantee[nvidia.com/gpu]",
        {"maxGuarantee": {"nvidia.com/gpu": 64}},
    ),
    (
        "capability over the ceiling",
        _set(_queue, capability={"nvidia.com/gpu": 4096}),
        "tenants.search.queue.capability[nvidia.com/gpu]",
        {"maxCapability": {"nvidia.com/gpu": 4096}},
    ),
    (
        "deserved over the ceiling",
        _set(_queue, deserved={"nvidia.com/gpu": 128}, capability={"nvidia.com/gpu": 128}),
        "tenants.search.queue.deserved[nvidia.com/gpu]",
        {"maxDeserved": {"nvidia.com/gpu": 128}},
    ),
    ("a foreign namespace", _tenant(namespaces=["argocd"]), "tenants.search.namespaces[0]", {"namespaces": ["argocd"]}),
    (
        "adopting a foreign namespace",
        _tenant(namespaces=["search", "shared-tools"], adopt=["namespaces"]),
        "tenants.search.namespaces[1]",
        {"namespaces": ["shared-tools"]},
    ),
    (
        "the top priority class",
        _set(_model, priorityClass="p0-critical"),
        "models.bge-reranker.priorityClass",
        {"priorityClasses": ["p0-critical", "p2-normal", "p3-low"]},
    ),
    (
        "an unpreemptable model",
        _set(_model, preemptable=False),
        "models.bge-reranker.preemptable",
        {"unpreemptableModels": True},
    ),
    (
        "another team's secret in env",
        _env_secret,
        "models.bge-reranker.env.HF_TOKEN.secret",
        {"secrets": ["chat-hf-token"]},
    ),
    (
        "another team's secret as a hub token",
        _hub_token,
        "models.bge-reranker.source.hub.tokenSecret",
        {"secrets": ["chat-hf-token"]},
    ),
    (
        "another team's registry login",
        _pull_secret,
        "models.bge-reranker.imagePullSecrets[0]",
        {"registries": ["chat-registry"]},
    ),
    (
        "a network in another team's namespace",
        _set(_model, networks=[{"name": "rdma", "namespace": "chat"}]),
        "models.bge-reranker.networks[0]",
        {"networks": ["chat/rdma"]},
    ),
    ("a host path", _host_path, "models.bge-reranker.volumes.node-root.hostPath", _privileged()),
    (
        "no seccomp filter",
        _set(_model, seccompProfile="Unconfined"),
        "models.bge-reranker.seccompProfile",
        _privileged(),
    ),
    (
        "requests at the top band of the gateway",
        _tenant(gateway={"priorityClass": "p0-critical"}),
        "tenants.search.gateway.priorityClass",
        {"priorityClasses": ["p0-critical", "p1-high", "p2-normal", "p3-low"]},
    ),
    (
        "a model served on another tenant's hostnames",
        _set(_model, gateway={"enabled": True, "consumers": ["search", "chat"]}),
        "models.bge-reranker.gateway.consumers[1]",
        {"consumers": ["chat"]},
    ),
    ("IPC_LOCK", _set(_model, capabilities=["IPC_LOCK"]), "models.bge-reranker.capabilities[0]", _privileged()),
    ("SYS_NICE", _set(_model, capabilities=["SYS_NICE"]), "models.bge-reranker.capabilities[0]", _privileged()),
]


def _problems(error: ConfigError) -> list[tuple[str | None, str]]:
    return [(p.file, p.path) for p in error.problems]


@pytest.mark.parametrize(("name", "edit", "key", "grant"), CASES, ids=[c[0] for c in CASES])
def test_a_tenant_file_cannot_reach_past_its_tenant(
    tmp_path: Path, name: str, edit: Edit, key: str, grant: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, edit)
    assert _problems(refused.value) == [(TENANT_FILE, key)], refused.value
    problem = refused.value.problems[0]
    assert "tenantPolicy.tenants.search." in problem.fix, "the fix names the grant"
    spec = _load(tmp_path, edit, grant)
    assert "search" in spec.tenants


def test_a_tenant_file_puts_its_queue_under_another_teams_only_with_a_grant(tmp_path: Path) -> None:
    """A child queue shares its parent's capability and deserved share: under another tenant
    file's grouping queue only when the platform grants it, under the platform's own freely."""

    def with_research(data: dict[str, Any]) -> None:
        _queue(data)["parent"] = "research"
        quota = {"capability": {"nvidia.com/gpu": 128}, "deserved": {"nvidia.com/gpu": 64}}
        research = {"tenants": {"research": {"namespaces": [], "queue": quota}}}
        (tmp_path / "repo" / "clusters" / "aicloud-b" / "tenants" / "research.yaml").write_text(
            yaml.safe_dump(research)
        )

    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, with_research)
    assert _problems(refused.value) == [(TENANT_FILE, "tenants.search.queue.parent")], refused.value
    assert "tenantPolicy.tenants.search.parents" in refused.value.problems[0].fix
    assert _load(tmp_path, with_research, {"parents": ["research"]}).tenants["search"].parent == "research"

    def under_platform_queue(data: dict[str, Any]) -> None:
        _queue(data)["parent"] = "org"

    def org(raw: dict[str, Any]) -> None:
        raw["tenants"] = {
            "org": {
                "namespaces": [],
                "queue": {"capability": {"nvidia.com/gpu": 256}, "deserved": {"nvidia.com/gpu": 128}},
            }
        }

    assert _load(tmp_path, under_platform_queue, platform=org).tenants["search"].parent == "org"


def test_a_restricted_tenant_runs_no_model(tmp_path: Path) -> None:
    """vLLM images run as root, which `restricted` refuses: every model of the tenant is refused,
    at its entry, with the level that admits it."""
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, lambda data: None, {"podSecurity": "restricted"})
    refused_models = {p.path for p in refused.value.problems}
    assert {"models.bge-reranker", "models.qwen3-30b"} <= refused_models
    assert all("restricted" in p.message and "podSecurity" in p.fix for p in refused.value.problems)


def test_a_pod_security_label_is_refused_whatever_the_grant(tmp_path: Path) -> None:
    """The level a tenant's namespaces enforce is its grant, labelled by the platform: a tenant
    file's own label is refused, the grant itself changes the level."""
    for grant in (None, _privileged()):
        with pytest.raises(ConfigError) as refused:
            _load(tmp_path, _pod_security, grant)
        assert _problems(refused.value) == [(TENANT_FILE, "tenants.search.labels[pod-security.kubernetes.io/enforce]")]
        assert "tenantPolicy.tenants.search.podSecurity" in refused.value.problems[0].fix


def test_the_cases_cover_the_tenant_boundary() -> None:
    assert len(CASES) >= 20


def test_within_its_grant_a_tenant_file_needs_no_grant(tmp_path: Path) -> None:
    """A quota under the ceilings, a class below the top, its own namespaces and networks."""

    def edit(data: dict[str, Any]) -> None:
        _queue(data).update(capability={"nvidia.com/gpu": 128}, deserved={"nvidia.com/gpu": 96})
        data["tenants"]["search"]["namespaces"] = ["search", "search-batch"]
        _model(data).update(priorityClass="p1-high", networks=[{"name": "rdma", "namespace": "search"}])

    assert "search-batch" in _load(tmp_path, edit).tenants["search"].namespaces


def test_what_a_model_inherits_from_the_platform_is_the_platforms(tmp_path: Path) -> None:
    def platform(raw: dict[str, Any]) -> None:
        raw["modelDefaults"]["env"] = {"HF_TOKEN": {"secret": "chat-hf-token"}}
        raw["modelDefaults"]["priorityClass"] = "p0-critical"

    spec = _load(tmp_path, lambda data: None, platform=platform)
    assert spec.models["bge-reranker"].config.priority_class == "p2-normal"  # its own, within its grant
    assert spec.models["qwen3-30b"].config.priority_class == "p0-critical"


def test_the_platforms_own_tenants_are_not_bound(tmp_path: Path) -> None:
    def platform(raw: dict[str, Any]) -> None:
        raw["tenants"] = {
            "ops": {
                "queue": {
                    "reclaimable": False,
                    "guarantee": {"nvidia.com/gpu": 8},
                    "deserved": {"nvidia.com/gpu": 8},
                    "priority": 9,
                }
            }
        }

    assert _load(tmp_path, lambda data: None, platform=platform).tenants["ops"].config.queue.priority == 9


def test_a_tenant_file_never_switches_cluster_wide_settings(tmp_path: Path) -> None:
    """Removing the only multi-node model (in the chat team's file) changes neither the eviction
    actions nor the LWS install: the platform's file sets them."""

    def without_llama(data: dict[str, Any]) -> None:
        pass

    before = _load(tmp_path, without_llama)
    chat = tmp_path / "repo" / "clusters" / "aicloud-b" / "tenants" / "chat.yaml"
    data = yaml.safe_load(chat.read_text())
    del data["models"]["llama-70b"]
    chat.write_text(yaml.safe_dump(data, sort_keys=False))
    after = load_raw(_platform(), STACK, encrypted=("secrets",), base_dir=tmp_path / "repo")
    assert "llama-70b" in before.models and "llama-70b" not in after.models
    for spec in (before, after):
        assert scheduler_actions(spec.config.volcano, spec.plans_multi_node_models)[2:4] == (
            "gangpreempt",
            "gangreclaim",
        )
        assert spec.lws_install


def test_a_multi_node_model_in_a_tenant_file_needs_the_platforms_settings(tmp_path: Path) -> None:
    def unset(raw: dict[str, Any]) -> None:
        del raw["volcano"], raw["lws"]

    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, lambda data: None, platform=unset)
    assert _problems(refused.value) == [("clusters/aicloud-b/tenants/chat.yaml", "models.llama-70b.nodesPerReplica")]
    assert "`lws.install: true`" in refused.value.problems[0].fix


def test_a_tenant_file_claims_only_its_own_hostnames(tmp_path: Path) -> None:
    """Another hostname would take a name the platform or another team serves."""
    taken = "api.llm.aicloud-b.example"
    claim = _tenant(gateway={"priorityClass": "p3-low", "hostnames": [taken]})
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, claim)
    assert _problems(refused.value) == [(TENANT_FILE, "tenants.search.gateway.hostnames[0]")], refused.value
    assert "tenantPolicy.tenants.search.hostnames" in refused.value.problems[0].fix
    own = ["search.llm.aicloud-b.example", "eu.search.llm.aicloud-b.example"]
    assert _load(tmp_path, _tenant(gateway={"priorityClass": "p3-low", "hostnames": own})).gateway is not None
    spec = _load(tmp_path, claim, {"hostnames": [taken]})
    assert spec.gateway is not None
    assert spec.gateway.consumers["qwen3-32b-batch"][0].hostnames == (taken,)
