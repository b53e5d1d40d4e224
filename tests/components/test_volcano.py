"""The Volcano install: chart values, the generated scheduler and controller configs."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.scheduling.volcano_values import volcano_values
from config.sections.volcano import VolcanoConfig
from config.spec.scheduler_conf import eviction_style, scheduler_conf
from config.upstream.volcano import REGISTERED_ACTIONS, REGISTERED_PLUGINS
from offline.check import unknown_value_keys, upstream_values
from offline.render import write_render
from tests.conftest import STACKS, load, mutate, paths_of, problems_of, stack_raw, under_parent_org

SEED = stack_raw("aicloud-a")
DEV = stack_raw("dev")


def _conf(raw: dict[str, Any]) -> dict[str, Any]:
    values = volcano_values(load(raw))
    return yaml.safe_load(values["custom"]["scheduler_config_override"])


def _plugins(conf: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}


def _scheduler(**settings: Any) -> Any:
    return lambda raw: raw.setdefault("volcano", {}).update(scheduler=settings)


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_release_carries_the_conf_the_config_asks_for(stack: str, committed_render: Any) -> None:
    result = committed_render(stack)
    release = next(r for r in result.rendered.releases if r.data["release"] == "volcano")
    assert release.data["values"] == volcano_values(result.spec)
    conf = yaml.safe_load(release.data["values"]["custom"]["scheduler_config_override"])
    actions = [a.strip() for a in conf["actions"].split(",")]
    # Gang-aware eviction where LWS groups run (the example cluster), the legacy actions elsewhere.
    gang = eviction_style(result.spec.config.volcano, result.spec.plans_multi_node_models) == "gang"
    evict = ["gangpreempt", "gangreclaim"] if gang else ["preempt", "reclaim"]
    assert actions == ["enqueue", "allocate", *evict, "backfill"]
    assert set(actions) <= REGISTERED_ACTIONS
    plugins = _plugins(conf)
    assert set(plugins) <= REGISTERED_PLUGINS
    assert "network-topology-aware" in plugins
    for plugin in plugins.values():
        for key, value in plugin.get("arguments", {}).items():
            if key.endswith(("weight", ".cpu", ".memory")) or ".resources." in key:
                assert type(value) is int, f"{plugin['name']}.{key} must be a YAML int"


def test_default_policy_for_a_gpu_platform() -> None:
    conf = _conf(SEED)
    tiers = [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]]
    assert tiers == [
        ["priority", "gang", "conformance", "capacity"],
        ["drf", "predicates", "nodeorder", "binpack", "network-topology-aware"],
    ]
    plugins = _plugins(conf)
    assert plugins["gang"]["enablePreemptable"] is False and plugins["gang"]["enableJobStarving"] is False
    assert plugins["drf"]["enablePreemptable"] is False
    gpu = "mars-tech.com/gpu"
    assert plugins["binpack"]["arguments"]["binpack.resources"] == gpu
    assert plugins["binpack"]["arguments"][f"binpack.resources.{gpu}"] == 10
    topology = plugins["network-topology-aware"]["arguments"]
    assert topology["hypernode.binpack.resources"] == gpu and topology[f"hypernode.binpack.resources.{gpu}"] == 10


def test_weights_plugins_and_actions_are_tunable() -> None:
    conf = _conf(
        mutate(
            SEED,
            _scheduler(
                actions=["enqueue", "allocate", "backfill"],
                binpack={"weight": 20, "gpu": 5, "resources": {"rdma/hca_cpta": 2}},
                networkTopology={"weight": 3},
                plugins={
                    "overcommit": {"tier": 2, "arguments": {"overcommit-factor": 1.2}},
                    "conformance": {"enabled": False},
                    "nodeorder": {"arguments": {"leastrequested.weight": 0}},
                    "gang": {"flags": {"enableJobStarving": True}},
                },
            ),
        )
    )
    assert conf["actions"] == "enqueue, allocate, backfill"
    plugins = _plugins(conf)
    assert "conformance" not in plugins
    assert plugins["overcommit"]["arguments"] == {"overcommit-factor": 1.2}
    assert plugins["nodeorder"]["arguments"] == {"leastrequested.weight": 0}
    assert plugins["gang"]["enablePreemptable"] is False and plugins["gang"]["enableJobStarving"] is True
    binpack = plugins["binpack"]["arguments"]
    assert binpack["binpack.weight"] == 20
    assert binpack["binpack.resources"] == "mars-tech.com/gpu,rdma/hca_cpta"
    assert binpack["binpack.resources.rdma/hca_cpta"] == 2
    assert plugins["network-topology-aware"]["arguments"]["weight"] == 3


def test_proportion_is_selectable_and_never_runs_with_capacity() -> None:
    plugins = _plugins(_conf(mutate(SEED, _scheduler(queuePlugin="proportion"))))
    assert "proportion" in plugins and "capacity" not in plugins
    assert "volcano.scheduler.plugins" in paths_of(
        mutate(SEED, _scheduler(queuePlugin="proportion", plugins={"capacity": {"tier": 2}}))
    )


def test_hierarchy_turns_on_with_parent_queues() -> None:
    raw = under_parent_org(SEED)
    assert _plugins(_conf(raw))["capacity"]["enableHierarchy"] is True
    assert "volcano.scheduler.queuePlugin" in paths_of(mutate(raw, _scheduler(queuePlugin="proportion")))
    assert "volcano.scheduler.hierarchy" in paths_of(mutate(raw, _scheduler(hierarchy=False)))


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"binpack.weight": "10"}, "integer"),
        ({"binpack.resources.nvidia.com/gpu": 2.5}, "integer"),
        ({"some.argument": "3"}, "quoted number"),
    ],
)
def test_argument_types_are_checked(arguments: dict[str, Any], message: str) -> None:
    problems = problems_of(mutate(SEED, _scheduler(plugins={"binpack": {"arguments": arguments}})))
    key = next(iter(arguments))
    assert any(
        p.path == f"volcano.scheduler.plugins.binpack.arguments[{key}]" and message in p.message for p in problems
    ), [str(p) for p in problems]


def test_new_plugins_need_a_tier() -> None:
    assert "volcano.scheduler.plugins.overcommit" in paths_of(mutate(SEED, _scheduler(plugins={"overcommit": {}})))


def test_topology_plugin_off_warns_for_constrained_models() -> None:
    spec = load(mutate(SEED, _scheduler(networkTopology={"enabled": False})))
    assert any(w.path == "volcano.scheduler.networkTopology.enabled" for w in spec.warnings)
    assert "network-topology-aware" not in _plugins(_conf(mutate(SEED, _scheduler(networkTopology={"enabled": False}))))


def test_old_volcano_versions_get_no_newer_arguments_and_reject_newer_fields() -> None:
    older = mutate(SEED, lambda r: r["volcano"].update(version="1.13.0"))
    unvendored = mutate(SEED, lambda r: r["volcano"].update(version="1.12.0"))
    older["models"]["qwen2-72b-tenanta"]["topology"] = {"mode": "hard", "highestTier": 1}
    messages = [p.message for p in problems_of(older) if p.path == "volcano.version"]
    assert any("subGroupPolicy" in m for m in messages)  # per-group gangs need 1.14
    unvendored_messages = [p.message for p in problems_of(unvendored) if p.path == "volcano.version"]
    assert any("no Volcano schemas of chart version 1.12.0 are vendored" in m for m in unvendored_messages)
    conf = scheduler_conf(VolcanoConfig(version="1.13.0"), "nvidia.com/gpu", hierarchy=False)
    assert _plugins(conf)["network-topology-aware"]["arguments"] == {"weight": 10}


def test_controller_conf_for_label_discovery() -> None:
    controller = volcano_values(load(SEED))["custom"]["controller_config_override"]
    assert isinstance(controller, dict), "the chart renders the controller conf with toYaml: it must be a mapping"
    (source,) = controller["networkTopologyDiscovery"]
    assert source["source"] == "label" and source["enabled"] is True and source["interval"] == "1m"
    assert source["config"]["networkTopologyTypes"] == {
        "topologyA2": [
            {"nodeLabel": "topology.aicloud/spine-pair"},
            {"nodeLabel": "topology.aicloud/leaf-pair"},
            {"nodeLabel": "kubernetes.io/hostname"},
        ]
    }
    assert "controller_config_override" not in volcano_values(load(DEV))["custom"]  # explicit HyperNodes


def test_images_replicas_and_placement_values() -> None:
    raw = mutate(
        DEV,
        lambda r: r.update(
            volcano={
                "imageRegistry": "registry.local",
                "imageTag": "v1.15.1",
                "imagePullSecret": "pull",
            },
            registries={"pull": {"server": "registry.local", "username": "u", "passwordSecret": "pw"}},
            secrets={"pw": "[secret]"},
        ),
    )
    raw["volcano"].update(
        {
            "replicas": {"scheduler": 2},
            "admission": False,
            "resources": {"scheduler": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}},
            "nodeSelector": {"node-role/control": "true"},
            "tolerations": [{"key": "control", "operator": "Exists", "effect": "NoSchedule"}],
        }
    )
    values = volcano_values(load(raw))
    assert values["basic"] == {
        "image_registry": "registry.local",
        "image_tag_version": "v1.15.1",
        "image_pull_secret": "pull",
    }
    custom = values["custom"]
    assert custom["scheduler_replicas"] == 2 and custom["leader_elect_enable"] is True
    assert custom["admission_enable"] is False
    assert custom["scheduler_resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    assert custom["default_ns"] == {"node-role/control": "true"}
    assert custom["default_tolerations"] == [{"key": "control", "operator": "Exists", "effect": "NoSchedule"}]
    assert volcano_values(load(DEV))["custom"]["leader_elect_enable"] is False


def test_values_escape_hatch_merges_over_generated_values() -> None:
    raw = mutate(DEV, lambda r: r.update(volcano={"values": {"custom": {"scheduler_log_level": 5}}}))
    custom = volcano_values(load(raw))["custom"]
    assert custom["scheduler_log_level"] == 5 and "scheduler_config_override" in custom


@pytest.mark.parametrize("stack", STACKS)
def test_every_values_key_exists_in_the_upstream_chart(stack: str) -> None:
    raw = mutate(
        stack_raw(stack),
        lambda r: r.setdefault("volcano", {}).update(
            imageRegistry="r.example.com",
            imageTag="t",
            imagePullSecret="volcano-pull",
            replicas={"scheduler": 2},
            resources={
                "scheduler": {"requests": {"cpu": 1}},
                "controller": {"requests": {"cpu": 1}},
                "admission": {"requests": {"cpu": 1}},
            },
            nodeSelector={"a": "b"},
            tolerations=[{"key": "k", "operator": "Exists"}],
        ),
    )
    pull = {"server": "r.example.com", "username": "u", "passwordSecret": "pw"}
    raw.setdefault("registries", {})["volcano-pull"] = pull
    raw.setdefault("secrets", {})["pw"] = "[secret]"
    values = volcano_values(load(raw))
    version = load(raw).config.volcano.version
    assert unknown_value_keys("volcano", version, values) == []
    upstream = upstream_values("volcano", version)
    assert upstream is not None
    assert set(values["custom"]) <= set(upstream["custom"]) and set(values["basic"]) <= set(upstream["basic"])
    assert unknown_value_keys("volcano", version, {"custom": {"scheduler_replica": 1}}) == ["custom.scheduler_replica"]


def test_release_is_a_helm_v3_release_with_protect(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    index = {e["urn"].split("::")[-1]: e for e in result.rendered.index}
    release = index["volcano-release"]
    assert release["type"] == "kubernetes:helm.sh/v3:Release"
    assert release["protect"] is True and index["volcano-namespace"]["protect"] is True
    assert any(d.endswith("::volcano-namespace") for d in release["dependsOn"])
    data = next(r for r in result.rendered.releases if r.data["release"] == "volcano").data
    # The example cluster's chart comes from its registry's OCI repository.
    assert data["chart"] == "oci://10.8.17.100:60066/charts/volcano" and data["version"] == "1.15.0"
    assert data["repository"] is None and data["namespace"] == "volcano-system"
    assert data["options"]["waitForJobs"] is True
    dev = {e["urn"].split("::")[-1]: e for e in committed_render("dev").rendered.index}
    assert "protect" not in dev["volcano-release"]
    dev_data = next(r for r in committed_render("dev").rendered.releases if r.data["release"] == "volcano").data
    assert dev_data["chart"] == "volcano" and dev_data["repository"] == "https://volcano-sh.github.io/helm-charts"


def test_scheduler_conf_is_a_readable_block_in_the_render(committed_render: Any, tmp_path: Any) -> None:
    write_render(committed_render("aicloud-a"), tmp_path)
    text = (tmp_path / "helm" / "volcano.yaml").read_text()
    assert (
        "    scheduler_config_override: |\n      actions: enqueue, allocate, gangpreempt, gangreclaim, backfill\n"
        in text
    )
    assert "\\n" not in text


def test_hierarchy_cannot_be_switched_off_through_a_plugin_override() -> None:
    raw = under_parent_org(SEED)
    override = mutate(raw, _scheduler(plugins={"capacity": {"flags": {"enableHierarchy": False}}}))
    assert "volcano.scheduler.plugins.capacity.flags" in paths_of(override)


# -- gang-aware eviction -----------------------------------------------------------------------------


def test_eviction_is_gang_aware_where_lws_groups_run() -> None:
    assert _conf(SEED)["actions"] == "enqueue, allocate, gangpreempt, gangreclaim, backfill"
    assert _conf(DEV)["actions"] == "enqueue, allocate, preempt, reclaim, backfill"
    legacy = mutate(SEED, _scheduler(eviction="pod"))
    assert _conf(legacy)["actions"] == "enqueue, allocate, preempt, reclaim, backfill"
    assert _conf(mutate(DEV, _scheduler(eviction="gang")))["actions"] == (
        "enqueue, allocate, gangpreempt, gangreclaim, backfill"
    )


def test_the_two_eviction_styles_never_mix() -> None:
    mixed = mutate(DEV, _scheduler(actions=["enqueue", "allocate", "preempt", "gangreclaim", "backfill"]))
    (problem,) = problems_of(mixed)
    assert problem.path == "volcano.scheduler.actions" and "must not run in one scheduler cycle" in problem.message
    contradiction = mutate(DEV, _scheduler(eviction="gang", actions=["enqueue", "allocate", "preempt", "backfill"]))
    assert "volcano.scheduler.eviction" in paths_of(contradiction)


def test_gang_eviction_needs_volcano_1_15() -> None:
    from config.sections.volcano import VolcanoConfig

    old = VolcanoConfig.model_validate({"version": "1.14.0", "scheduler": {"eviction": "gang"}})
    assert scheduler_conf(old, "nvidia.com/gpu", hierarchy=False)["actions"].count("gang") == 2
    raw = mutate(DEV, lambda r: r.update(volcano={"version": "1.14.0", "scheduler": {"eviction": "gang"}}))
    assert any("need Volcano >= 1.15" in p.message for p in problems_of(raw) if p.path == "volcano.scheduler.eviction")


def test_legacy_eviction_with_several_lws_groups_is_warned_about() -> None:
    raw = mutate(SEED, _scheduler(eviction="pod"))
    raw["models"]["qwen2-72b-tenanta"]["replicas"] = 2
    (warning,) = [
        w for w in load(raw).warnings if w.path == "volcano.scheduler.eviction" and "LWS then restarts" in w.message
    ]
    assert "eviction: gang" in warning.fix


def test_action_configurations_must_name_actions_that_run() -> None:
    unknown = mutate(DEV, _scheduler(configurations=[{"name": "allocte", "arguments": {"x": 1}}]))
    assert "volcano.scheduler.configurations[0].name" in paths_of(unknown)
    idle = load(mutate(DEV, _scheduler(configurations=[{"name": "gangpreempt", "arguments": {"maxDomains": 4}}])))
    assert [w.path for w in idle.warnings] == ["volcano.scheduler.configurations[0].name"]


def test_the_list_of_generated_values_is_what_the_program_generates() -> None:
    """`volcano.values` may not override these; the list must name every key the program writes."""
    from config.checks.installs import GENERATED_VOLCANO_VALUES

    raw = mutate(
        SEED,
        lambda r: (
            r["volcano"].update(
                imageTag="v1.15.1",
                resources={c: {"requests": {"cpu": 1}} for c in ("scheduler", "controller", "admission")},
                nodeSelector={"a": "b"},
                tolerations=[{"key": "k", "operator": "Exists"}],
            )
            or r.update(observability={"enabled": True})
        ),
    )
    values = volcano_values(load(raw))
    assert {s: set(values[s]) for s in ("basic", "custom")} == {s: set(k) for s, k in GENERATED_VOLCANO_VALUES.items()}


def _policy_patches(result: Any) -> dict[str, dict[str, Any]]:
    return {o.name: o.manifest for o in result.rendered.objects if o.patch and o.kind == "ConfigMap"}


def test_volcano_installed_elsewhere_gets_only_the_policy(render_raw: Any) -> None:
    result = render_raw(mutate(DEV, lambda r: r.update(volcano={"install": False})))
    assert result.rendered.releases == []
    assert not result.rendered.by_kind("Namespace") or "volcano-system" not in {
        o.name for o in result.rendered.by_kind("Namespace")
    }
    patches = _policy_patches(result)
    assert set(patches) == {"volcano-scheduler-configmap"}
    patch = patches["volcano-scheduler-configmap"]
    assert patch["metadata"]["namespace"] == "volcano-system"
    # the key holds the same policy the chart would have been given, and nothing else of the ConfigMap
    installed = volcano_values(load(DEV))["custom"]["scheduler_config_override"]
    assert patch["data"] == {"volcano-scheduler.conf": installed}
    # Queues and HyperNodes wait for the policy instead of the chart
    index = {e["urn"].split("::")[-1]: e for e in result.rendered.index}
    for waits in ("topology-hypernode-leaf-a", "tenants-queue-team-a"):
        assert any(d.endswith("::volcano-scheduler-conf") for d in index[waits]["dependsOn"]), index[waits]


def test_volcano_installed_elsewhere_gets_the_discovery_conf_of_its_controller(render_raw: Any) -> None:
    assert SEED["topology"]["hyperNodes"] == "discovery"
    patches = _policy_patches(render_raw(mutate(SEED, lambda r: r.update(volcano={"install": False}))))
    assert set(patches) == {"volcano-scheduler-configmap", "volcano-controller-configmap"}
    conf = yaml.safe_load(patches["volcano-controller-configmap"]["data"]["volcano-controller.conf"])
    assert conf["networkTopologyDiscovery"][0]["source"] == "label"


def test_chart_settings_are_refused_when_volcano_is_installed_elsewhere() -> None:
    raw = mutate(DEV, lambda r: r.update(volcano={"install": False, "replicas": {"scheduler": 2}, "protect": True}))
    assert paths_of(raw) == ["volcano.protect", "volcano.replicas"]
    load(mutate(DEV, lambda r: r.update(volcano={"install": False, "version": "1.15.0", "scheduler": {}})))
