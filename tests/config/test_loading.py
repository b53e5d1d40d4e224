"""Loading the stack config: valid stacks, one clear error per bad config, never a traceback."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import config
from cli.main import main
from config.sections.stack import TOP_LEVEL_KEYS
from config.stack_file.reader import read_stack
from offline.engine import run_program
from tests.conftest import PROJECT_DIR, STACKS, load, mutate, problems_of, stack_raw, write_stack

SEED = stack_raw("aicloud-a")
LWS_MODEL = "qwen2-72b-tenanta"
DEPLOY_MODEL = "qwen8b-preemptor"


def _set(path: list[Any], value: Any) -> Any:
    def change(raw: dict[str, Any]) -> None:
        node = raw
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else node[key]
        node[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Any:
    def change(raw: dict[str, Any]) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return change


def _leaf(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return raw["topology"]["domains"]["spinepair12"]["domains"][name]


# (case id, mutation of the seed cluster's config, key path the error must name)
BAD_CONFIGS = [
    ("unknown-top-level-key", _set(["tenant"], {}), "tenant"),
    ("unknown-model-key", _set(["models", DEPLOY_MODEL, "replica"], 2), f"models.{DEPLOY_MODEL}.replica"),
    ("quoted-integer", _set(["models", DEPLOY_MODEL, "replicas"], "2"), f"models.{DEPLOY_MODEL}.replicas"),
    ("word-for-integer", _set(["cluster", "gpusPerNode"], "eight"), "cluster.gpusPerNode"),
    ("version-as-float", _set(["volcano", "version"], 1.15), "volcano.version"),
    ("bool-as-string", _set(["volcano", "protect"], "yes"), "volcano.protect"),
    ("list-for-mapping", _set(["tenants"], ["tenanta"]), "tenants"),
    ("bad-tenant-name", _set(["tenants", "Tenant_A"], {}), "tenants.Tenant_A"),
    ("reserved-queue-root", _set(["tenants", "root"], {}), "tenants.root.queue.name"),
    ("reserved-queue-default", _set(["tenants", "tenantb", "queue", "name"], "default"), "tenants.tenantb.queue.name"),
    ("missing-tenant", _set(["models", DEPLOY_MODEL, "tenant"], "tenantc"), f"models.{DEPLOY_MODEL}.tenant"),
    (
        "missing-priority-class",
        _set(["models", DEPLOY_MODEL, "priorityClass"], "gold"),
        f"models.{DEPLOY_MODEL}.priorityClass",
    ),
    ("foreign-namespace", _set(["models", DEPLOY_MODEL, "namespace"], "b01"), f"models.{DEPLOY_MODEL}.namespace"),
    (
        "bad-quantity",
        _set(["models", DEPLOY_MODEL, "resources", "memory"], "48 Gi"),
        f"models.{DEPLOY_MODEL}.resources.memory",
    ),
    ("missing-image", _delete(["modelDefaults", "image"]), f"models.{DEPLOY_MODEL}.image"),
    ("unknown-entrypoint", _set(["models", DEPLOY_MODEL, "entrypoint"], "run"), f"models.{DEPLOY_MODEL}.entrypoint"),
    ("bad-tier-label", _set(["topology", "tiers", 0], "Leaf Pair!"), "topology.tiers[0]"),
    (
        "node-in-two-leaves",
        lambda r: _leaf(r, "leafpair34").update(nodes=["gpu-worker-[60-128]"]),
        "topology.domains.spinepair12.domains.leafpair34.nodes[0]",
    ),
    (
        "bad-node-range",
        lambda r: _leaf(r, "leafpair34").update(nodes=["gpu-worker-[128-65]"]),
        "topology.domains.spinepair12.domains.leafpair34.nodes[0]",
    ),
    ("missing-queue-parent", _set(["tenants", "tenantb", "queue", "parent"], "org"), "tenants.tenantb.queue.parent"),
    (
        "guarantee-over-deserved",
        _set(["tenants", "tenanta", "queue", "guarantee", "mars-tech.com/gpu"], 600),
        "tenants.tenanta.queue.guarantee[mars-tech.com/gpu]",
    ),
    (
        "unknown-action",
        _set(["volcano", "scheduler"], {"actions": ["enqueue", "allocate", "steal"]}),
        "volcano.scheduler.actions",
    ),
    (
        "unknown-plugin",
        _set(["volcano", "scheduler"], {"plugins": {"magic": {"tier": 2}}}),
        "volcano.scheduler.plugins.magic",
    ),
    (
        "capacity-and-proportion",
        _set(["volcano", "scheduler"], {"plugins": {"proportion": {"tier": 2}}}),
        "volcano.scheduler.plugins",
    ),
    (
        "parallelism-mismatch",
        _set(["models", LWS_MODEL, "engine", "pipelineParallelSize"], 1),
        f"models.{LWS_MODEL}.engine",
    ),
    (
        "service-name-collision",
        _set(["models", DEPLOY_MODEL, "serviceName"], "qwen2-72b-leader"),
        f"models.{DEPLOY_MODEL}.serviceName",
    ),
    ("namespace-of-two-tenants", _set(["tenants", "tenantb", "namespaces"], ["a01"]), "tenants.tenantb.namespaces[0]"),
    (
        "model-name-too-long",
        lambda r: r["models"].update({"m" * 41: r["models"].pop(DEPLOY_MODEL)}),
        "models." + "m" * 41,
    ),
    (
        "unknown-tier-name",
        _set(["models", LWS_MODEL, "topology"], {"mode": "hard", "highestTierName": "rack"}),
        f"models.{LWS_MODEL}.topology.highestTierName",
    ),
]


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stacks_load(stack: str) -> None:
    spec = load(stack_raw(stack), stack)
    assert spec.models and spec.tenants


@pytest.mark.parametrize("case, change, path", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_names_key_path(case: str, change: Any, path: str) -> None:
    problems = problems_of(mutate(SEED, change))
    assert path in [p.path for p in problems], [str(p) for p in problems]
    for problem in problems:
        assert problem.message and problem.fix, f"{case}: a problem without a fix: {problem}"


def test_at_least_twenty_distinct_bad_configs() -> None:
    assert len({path for _, _, path in BAD_CONFIGS}) >= 20


@pytest.mark.parametrize("case, change, path", BAD_CONFIGS[::3], ids=[c[0] for c in BAD_CONFIGS[::3]])
def test_bad_config_through_the_cli(
    case: str, change: Any, path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_file = write_stack(tmp_path / "Pulumi.bad.yaml", mutate(SEED, change))
    code = main(["render", "--stack", "bad", "--config-file", str(stack_file), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert path in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
    run = run_program(PROJECT_DIR, read_stack(PROJECT_DIR, "bad", stack_file))
    assert run.config_error is not None
    assert run.registrations == [], "nothing may be registered for an invalid config"


def test_all_problems_are_reported_together() -> None:
    raw = mutate(SEED, _set(["models", DEPLOY_MODEL, "priorityClass"], "gold"))
    raw = mutate(raw, _set(["tenants", "tenantb", "queue", "parent"], "org"))
    raw = mutate(raw, _set(["models", LWS_MODEL, "engine", "pipelineParallelSize"], 1))
    paths = {p.path for p in problems_of(raw)}
    assert {
        f"models.{DEPLOY_MODEL}.priorityClass",
        "tenants.tenantb.queue.parent",
        f"models.{LWS_MODEL}.engine",
    } <= paths


def test_error_message_format() -> None:
    problem = problems_of(mutate(SEED, _set(["models", DEPLOY_MODEL, "replicas"], "2")))[0]
    text = str(problem)
    assert text.startswith(f"models.{DEPLOY_MODEL}.replicas: ")
    assert '(got "2")' in text and "without quotes" in text


def test_unknown_key_suggests_the_closest() -> None:
    problem = problems_of(mutate(SEED, _set(["models", DEPLOY_MODEL, "replica"], 2)))[0]
    assert "did you mean `replicas`" in problem.fix


def test_model_defaults_apply_and_models_override() -> None:
    spec = load(SEED)
    assert spec.models[DEPLOY_MODEL].config.image.startswith("10.8.17.100:60066/mars/vllm-mars")
    raw = mutate(SEED, _set(["models", DEPLOY_MODEL, "image"], "registry.local/vllm:v0.19.0"))
    assert load(raw).models[DEPLOY_MODEL].config.image == "registry.local/vllm:v0.19.0"
    assert load(raw).models[LWS_MODEL].config.image.startswith("10.8.17.100")


def test_unknown_model_default_is_reported() -> None:
    assert "modelDefaults.replica" in [p.path for p in problems_of(mutate(SEED, _set(["modelDefaults", "replica"], 2)))]


def test_empty_mapping_means_not_set() -> None:
    raw = copy.deepcopy(SEED)
    raw["priorityClasses"] = {}
    raw["defaultQueue"] = {}
    spec = load(raw)
    assert "p3-low" in spec.priority_classes
    assert spec.config.default_queue is None


def test_plaintext_secret_is_an_error() -> None:
    raw = mutate(SEED, lambda r: r["secrets"].update({"hf-token": "hf_abc"}))
    with pytest.raises(config.ConfigError) as caught:
        config.load_raw(raw, "x", plaintext_secrets=["hf-token"])
    assert [p.path for p in caught.value.problems] == ["secrets.hf-token"]
    assert "hf_abc" not in str(caught.value)


# -- property tests ---------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
structures = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(TOP_LEVEL_KEYS), structures, max_size=5))
def test_random_structures_give_a_spec_or_a_config_error(raw: dict[str, Any]) -> None:
    try:
        config.load_raw(raw, "fuzz")
    except config.ConfigError as error:
        assert error.problems and all(p.path for p in error.problems)


def _leaf_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaf_paths(v, (*prefix, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaf_paths(v, (*prefix, i))]
    return [prefix]


def _every_section() -> dict[str, Any]:
    """The seed cluster plus the sections it leaves out, so the property test reaches every key."""
    raw = copy.deepcopy(SEED)
    raw["volcano"]["scheduler"] = {
        "actions": ["enqueue", "allocate", "backfill"],
        "hierarchy": False,
        "binpack": {"weight": 5, "resources": {"rdma/hca_cpta": 1}},
        "plugins": {"overcommit": {"tier": 2, "arguments": {"overcommit-factor": 1.2}}},
    }
    raw["volcano"]["resources"] = {"scheduler": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    raw["volcano"]["tolerations"] = [{"key": "control", "operator": "Exists"}]
    raw["include"] = {"files": ["tests/fixtures/include/priority-classes.yaml"]}  # priorityClasses
    raw["registries"] = {
        "mars-registry": {"server": "10.8.17.100:60066", "username": "svc", "passwordSecret": "registry-password"}
    }
    raw["secrets"] = {**raw["secrets"], "registry-password": "pw", "hf-token": "hf"}
    model = raw["models"][DEPLOY_MODEL]
    model["imagePullSecrets"] = ["mars-registry"]
    model["env"]["HF_HUB_TOKEN"] = {"secret": "hf-token"}
    model["env"]["POD_IP"] = {"fieldPath": "status.podIP"}
    model["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    raw["models"][LWS_MODEL]["topology"] = {"mode": "hard", "highestTier": 2}
    raw["models"][LWS_MODEL]["pools"] = ["seed"]
    raw["pools"] = {
        "seed": {
            "selector": {"node.example.com/group": "gpu"},
            "accelerator": {"count": 8, "product": "NVIDIA-H800", "type": "h800"},
            "taints": [{"key": "gpu", "effect": "NoSchedule"}],
            "topology": {"named": ["spinepair12"]},
        }
    }
    raw["topology"]["domains"]["spinepair12"]["domains"]["leafpair34"]["nodes"] = [
        "gpu-worker-[65-127]",
        {"names": "gpu-worker-128", "gpus": 4},
    ]
    raw["tenantPolicy"] = {
        "default": {
            "priorityClasses": ["p3-low"],
            "maxGuarantee": {"mars-tech.com/gpu": 64},
            "podSecurity": "baseline",
        },
        "tenants": {
            "tenanta": {
                "maxQueuePriority": 2,
                "secrets": ["hf-token"],
                "networks": ["a01/rdma"],
                "podSecurity": "privileged",
                "pools": ["seed"],
                "nfs": ["nfs.example.com:/exports/models"],
                "byType": {"h800": {"maxCapability": {"mars-tech.com/gpu": 512}}},
            }
        },
    }
    raw["networkPolicies"] = {
        "dnsNamespace": "kube-system",
        "hubEgressCidrs": ["10.20.0.0/24"],
        "hubEgressPorts": [443],
    }
    raw["tenants"]["tenanta"]["allowFrom"] = {"namespaces": ["apps"], "cidrs": ["10.0.0.0/8"]}
    raw["observability"] = {
        "enabled": True,
        "alerts": {"requestsWaiting": 20, "labels": {"team": "gpu"}},
        "dashboard": {"folder": "GPU"},
    }
    model["autoscaling"] = {"minReplicas": 1, "maxReplicas": 4, "metric": "requestsWaiting", "target": 5}
    raw["gateway"] = {
        "className": "istio",
        "domain": "llm.example.com",
        "router": {"cpu": "1", "flowControl": {"queueTimeoutSeconds": 600, "fairness": "strict"}},
    }
    model["gateway"] = {"enabled": True}
    return raw


EVERY_SECTION = _every_section()
SEED_LEAVES = _leaf_paths(EVERY_SECTION)


def test_the_property_base_is_valid_and_reaches_every_section() -> None:
    spec = load(EVERY_SECTION)
    assert spec.models and set(spec.priority_classes) == {"p0-critical", "p3-low"}, "the included section joined"
    # priorityClasses comes from the included file, which the leaves of `include` reach.
    assert {path[0] for path in SEED_LEAVES} | {"priorityClasses"} == set(TOP_LEVEL_KEYS)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEED_LEAVES), scalars | st.just({}) | st.just([]))
def test_any_leaf_of_a_valid_stack_replaced_gives_a_spec_or_a_config_error(path: tuple[Any, ...], value: Any) -> None:
    """Reaches every section: each leaf of the seed cluster's config replaced by a random value."""
    raw = json.loads(json.dumps(EVERY_SECTION))
    node = raw
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    try:
        config.load_raw(raw, "fuzz")
    except config.ConfigError as error:
        assert error.problems


def test_a_bad_model_default_is_reported_once_where_it_was_written() -> None:
    problems = problems_of(mutate(SEED, _set(["modelDefaults", "port"], "8080")))
    assert [p.path for p in problems] == ["modelDefaults.port"]
    own = problems_of(mutate(SEED, _set(["models", DEPLOY_MODEL, "port"], "8080")))
    assert [p.path for p in own] == [f"models.{DEPLOY_MODEL}.port"]


def test_model_defaults_join_tolerations_pull_secrets_and_networks() -> None:
    raw = copy.deepcopy(SEED)
    raw["modelDefaults"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    raw["modelDefaults"]["networks"] = [{"name": "compute-a-net01", "namespace": "nad"}]
    model = raw["models"][DEPLOY_MODEL]
    model["tolerations"] = [{"key": "tenant-a", "operator": "Exists"}]
    model["networks"] = [{"name": "compute-a-net01", "namespace": "nad", "interface": "net1"}]
    model["imagePullSecrets"] = ["mars-registry"]
    raw["modelDefaults"]["engine"]["extraArgs"] = ["--max-num-seqs=8"]
    model.setdefault("engine", {})["extraArgs"] = ["--seed=1"]
    cfg = load(raw).models[DEPLOY_MODEL].config
    assert [t.key for t in cfg.tolerations] == ["gpu", "tenant-a"]  # joined
    assert [(n.name, n.interface) for n in cfg.networks] == [("compute-a-net01", "net1")]  # the model's wins
    assert cfg.image_pull_secrets == ("mars-registry",)  # the same registry once
    assert cfg.engine.extra_args == ("--seed=1",)  # other lists are replaced


def test_problems_with_inherited_values_are_reported_once_at_model_defaults() -> None:
    raw = mutate(SEED, _set(["modelDefaults", "image"], "10.8.17.100:60066/mars/vllm-mars:latest"))
    problems = [p for p in problems_of(raw) if p.path.endswith("image")]
    assert [p.path for p in problems] == ["modelDefaults.image"]
    assert "inherited by qwen2-72b-tenanta, qwen8b-preemptor" in problems[0].message
    own = mutate(raw, _set(["models", DEPLOY_MODEL, "image"], "10.8.17.100:60066/mars/vllm-mars:nightly"))
    assert sorted(p.path for p in problems_of(own) if p.path.endswith("image")) == ["modelDefaults.image"]


def test_a_warning_about_a_platform_default_several_models_keep_is_reported_once() -> None:
    def keep_default_budget(raw: dict[str, Any]) -> None:
        for model in raw["models"].values():
            model.pop("startup", None)

    raw = mutate(SEED, keep_default_budget)
    path = "startup.loadTimeoutSeconds"
    warnings = [w for w in load(raw).warnings if w.path.endswith(path)]
    assert [w.path for w in warnings] == [f"modelDefaults.{path}"]
    assert "1800 is the platform default, which qwen2-72b-tenanta, qwen8b-preemptor keep" in warnings[0].message
    # A model that sets its own budget is told at its own key; one model alone keeps its own path.
    own = mutate(raw, _set(["models", DEPLOY_MODEL, "startup"], {"loadTimeoutSeconds": 900}))
    assert sorted(w.path for w in load(own).warnings if w.path.endswith(path)) == [
        f"models.qwen2-72b-tenanta.{path}",
        f"models.{DEPLOY_MODEL}.{path}",
    ]


def test_a_kubeconfig_with_credentials_must_be_encrypted() -> None:
    kubeconfig = "users:\n- name: a\n  user:\n    token: abcdef0123456789\n"
    raw = mutate(SEED, _set(["cluster", "kubeconfig"], kubeconfig))
    assert "cluster.kubeconfig" in [p.path for p in problems_of(raw)]
    assert load(raw, encrypted=["cluster"]).config.cluster.kubeconfig is not None
    path_only = mutate(SEED, _set(["cluster", "kubeconfig"], "/etc/platform/kubeconfig-aicloud-a"))
    assert load(path_only).config.cluster.kubeconfig is not None


def test_oversized_annotations_are_refused() -> None:
    raw = mutate(SEED, _set(["models", DEPLOY_MODEL, "annotations"], {"example.com/blob": "x" * (256 * 1024)}))
    assert f"models.{DEPLOY_MODEL}.annotations" in [p.path for p in problems_of(raw)]


def test_a_model_choosing_another_source_kind_replaces_the_defaults_kind() -> None:
    raw = mutate(SEED, _set(["models", DEPLOY_MODEL, "source"], {"hub": {"id": "Qwen/Qwen3-8B"}}))
    source = load(raw).models[DEPLOY_MODEL].config.source
    assert source.hub is not None and source.nfs is None and source.model is None
    assert source.model_path == "Qwen/Qwen3-8B"


@pytest.mark.slow
def test_the_program_imports_no_kubernetes_api_client() -> None:
    """Quantities are parsed by the client library's own parser, loaded alone: the package's
    `__init__` would import the whole API client on every render and preview."""
    code = (
        "import sys; import config; from config.schema.quantity import quantity_value; "
        "assert quantity_value('64Gi') == 64 * 2**30 and str(quantity_value('500m')) == '0.500'; "
        "import components.platform; print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT_DIR)
    assert out.stdout.strip() == "[]"
