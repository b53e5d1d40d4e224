"""The routers of a model with prefill and decode apart, as rendered: one per slice behind the model's
one Service and pool, each keeping both of its profiles to its own slice. The real router runs this
config in tests/e2e/test_disaggregated_router.py; here, what each slice gets and what it shares."""

from __future__ import annotations

from typing import Any

import yaml

from config.platform_labels import SLICE_LABEL
from tests.components.helpers import objects_of_kind
from tests.conftest import mutate, stack_raw

STACK = "aicloud-b"
PD = "qwen3-235b-pd"
SLICES = ("0", "1")


def _config(render: Any, index: str) -> dict[str, Any]:
    config_map = render.rendered.find("ConfigMap", f"{PD}-epp-s{index}", "search").manifest
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["config.yaml"])
    return config


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_each_slice_routers_profiles_keep_to_its_slice(committed_render: Any) -> None:
    render = committed_render(STACK)
    single = yaml.safe_load(
        render.rendered.find("ConfigMap", "qwen3-32b-batch-epp", "search").manifest["data"]["config.yaml"]
    )
    for index in SLICES:
        config = _config(render, index)
        plugins = {p.get("name", p["type"]): p for p in config["plugins"]}
        assert plugins["this-slice"] == {
            "name": "this-slice",
            "type": "by-label",
            "parameters": {"label": SLICE_LABEL, "validValues": [index]},
        }
        profiles = {p["name"]: [ref["pluginRef"] for ref in p["plugins"]] for p in config["schedulingProfiles"]}
        assert set(profiles) == {"decode", "prefill"}
        assert profiles["decode"][:2] == ["this-slice", "decode-filter"]
        assert profiles["prefill"][:2] == ["this-slice", "prefill-filter"]
        assert all(refs[-1] == "max-score-picker" for refs in profiles.values())
        handler = plugins["disagg-profile-handler"]["parameters"]
        assert handler == {"deciders": {"prefill": "prefix-based-pd-decider"}}
        assert plugins["prefix-based-pd-decider"]["parameters"] == {"nonCachedTokens": 16}
        assert "disagg-headers-handler" in plugins
        # The decider reads the prefix cache's match, computed only with this gate.
        assert config["featureGates"] == ["prepareDataPlugins", "flowControl"]
        # The same queue as any router of the stack's consumers at that band.
        assert config["flowControl"] == single["flowControl"]


def test_the_slices_routers_share_the_service_and_each_deployment_keeps_its_own_pods(committed_render: Any) -> None:
    render = committed_render(STACK)
    deployments = {n: d for n, d in objects_of_kind(render, "Deployment").items() if n.startswith(f"{PD}-epp")}
    assert sorted(deployments) == [f"{PD}-epp-s0", f"{PD}-epp-s1"]
    service = objects_of_kind(render, "Service")[f"{PD}-epp"]
    for name, deployment in deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert _selects(service["spec"]["selector"], labels), name
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == f"{PD}-epp"
        assert pod["volumes"] == [{"name": "config", "configMap": {"name": name}}]
        for other, their in deployments.items():
            selected = _selects(
                deployment["spec"]["selector"]["matchLabels"], their["spec"]["template"]["metadata"]["labels"]
            )
            assert selected is (other == name), (name, other)
    pools = objects_of_kind(render, "InferencePool")
    assert pools[PD]["spec"]["endpointPickerRef"]["name"] == f"{PD}-epp"


def test_the_prefill_threshold_is_the_stacks(render_raw: Any) -> None:
    raw = mutate(stack_raw(STACK), lambda r: r["models"][PD]["disaggregation"].update(nonCachedTokens=256))
    render = render_raw(raw)
    for index in SLICES:
        plugins = {p["type"]: p for p in _config(render, index)["plugins"]}
        assert plugins["prefix-based-pd-decider"]["parameters"] == {"nonCachedTokens": 256}
