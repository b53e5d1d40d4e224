"""The inference gateway's spec and checks: request bands ranked from the PriorityClasses, who
consumes which model, and what a model that scales from zero needs behind the gateway."""

from __future__ import annotations

from typing import Any

import pytest

from config.schema.names import (
    dns_label_problem,
    dns_subdomain_problem,
    gateway_hostname_problem,
    image_reference_problem,
    label_value_problem,
)
from config.sections.priority import PriorityClassConfig
from config.spec.gateway import ranked_bands, wake_up_query
from tests.conftest import load, mutate, paths_of, problems_of, stack_raw

B = stack_raw("aicloud-b")


def _classes(**values: int) -> dict[str, PriorityClassConfig]:
    return {name.replace("_", "-"): PriorityClassConfig(value=v) for name, v in values.items()}


def test_bands_rank_the_classes_around_the_baseline() -> None:
    classes = _classes(gold=1_000_000, silver=10_000, bronze=10, scrap=-5)
    assert ranked_bands(classes, "silver") == {"gold": 1, "silver": 0, "bronze": -1, "scrap": -2}
    assert ranked_bands(classes, "scrap") == {"gold": 3, "silver": 2, "bronze": 1, "scrap": 0}


def test_classes_of_one_value_share_a_band() -> None:
    classes = _classes(a=100, b=100, c=1)
    assert ranked_bands(classes, "c") == {"a": 1, "b": 1, "c": 0}


def test_the_example_orders_chat_above_search_on_the_shared_model() -> None:
    gateway = load(B).gateway
    assert gateway is not None
    assert gateway.baseline == "p3-low", "the lowest class a consumer uses: no band is negative"
    assert gateway.objectives("qwen3-8b") == {"p0-critical": 3, "p3-low": 0}
    chat, search = gateway.consumers["qwen3-8b"]
    assert (chat.tenant, chat.band, chat.hostnames) == ("chat", 3, ("chat.llm.aicloud-b.example",))
    assert (search.tenant, search.band) == ("search", 0)
    assert [c.tenant for c in gateway.consumers["qwen3-32b-batch"]] == ["search"]


def test_a_tenant_without_a_class_takes_its_models_class_or_the_baseline() -> None:
    raw = mutate(B, lambda r: r["tenants"]["chat"].pop("gateway"))
    gateway = load(raw).gateway
    assert gateway is not None
    # chat's models run at p0-critical and p1-high: no single class, so the baseline
    assert gateway.tenant_classes["chat"] == gateway.baseline == "p3-low"
    raw = mutate(raw, lambda r: r["models"]["llama-70b"].update(priorityClass="p0-critical"))
    assert load(raw).gateway.tenant_classes["chat"] == "p0-critical"  # type: ignore[union-attr]


def test_an_explicit_baseline_makes_lower_classes_negative() -> None:
    raw = mutate(B, lambda r: r["gateway"].update(baselinePriorityClass="p1-high"))
    gateway = load(raw).gateway
    assert gateway is not None
    assert gateway.objectives("qwen3-8b") == {"p0-critical": 1, "p3-low": -2}


def test_no_gateway_without_a_model_behind_it() -> None:
    raw = mutate(B, lambda r: [m.get("gateway", {}).update(enabled=False) for m in r["models"].values()])
    raw["models"]["qwen3-32b-batch"]["autoscaling"]["minReplicas"] = 1
    spec = load(raw)
    assert spec.gateway is None
    assert [w.path for w in spec.warnings if w.path == "gateway"] == ["gateway"]


def test_the_wake_up_reads_the_routers_queue_of_the_model() -> None:
    spec = load(B)
    query = wake_up_query(spec.gateway, spec.models["qwen3-32b-batch"])
    assert query == (
        'sum(inference_extension_flow_control_queue_size{namespace="search",inference_pool="qwen3-32b-batch"})'
    )
    assert wake_up_query(spec.gateway, spec.models["llama-70b"]) is None, "not behind the gateway"
    off_raw = mutate(B, lambda r: r["gateway"].update(router={"flowControl": {"enabled": False}}))
    off_raw["models"]["qwen3-32b-batch"]["autoscaling"]["minReplicas"] = 1
    off = load(off_raw)
    assert wake_up_query(off.gateway, off.models["qwen3-8b"]) is None


def test_the_queue_waits_as_long_as_a_waking_model_loads() -> None:
    gateway = load(B).gateway
    assert gateway is not None
    # qwen3-32b-batch's default load budget, a 30 s scrape, a 30 s KEDA poll and the scale-up's margin
    assert gateway.queue_timeout_seconds == 1800 + 30 + 30 + 120
    raw = mutate(B, lambda r: r["models"]["qwen3-32b-batch"].update(startup={"loadTimeoutSeconds": 900}))
    assert load(raw).gateway.queue_timeout_seconds == 900 + 180  # type: ignore[union-attr]


def _gateway_off(raw: dict[str, Any]) -> None:
    raw["gateway"]["router"] = {"flowControl": {"enabled": False}}


REFUSED: dict[str, tuple[Any, str]] = {
    "a model behind a gateway the stack does not have": (
        lambda r: r.pop("gateway"),
        "models.qwen3-8b.gateway.enabled",
    ),
    "a created Gateway without a class": (lambda r: r["gateway"].pop("className"), "gateway.className"),
    "an unknown consumer": (
        lambda r: r["models"]["qwen3-8b"]["gateway"].update(consumers=["chat", "ads"]),
        "models.qwen3-8b.gateway.consumers[1]",
    ),
    "a consumer listed twice": (
        lambda r: r["models"]["qwen3-8b"]["gateway"].update(consumers=["chat", "chat"]),
        "models.qwen3-8b.gateway.consumers[1]",
    ),
    "two models one tenant reaches under one name": (
        lambda r: r["models"]["qwen3-32b-batch"].update(servedModelName="Qwen3-8B"),
        "models.qwen3-8b.servedModelName",
    ),
    "an unknown class for a tenant's requests": (
        lambda r: r["tenants"]["search"]["gateway"].update(priorityClass="gold"),
        "tenants.search.gateway.priorityClass",
    ),
    "an unknown baseline": (
        lambda r: r["gateway"].update(baselinePriorityClass="gold"),
        "gateway.baselinePriorityClass",
    ),
    "a consumer without a hostname": (lambda r: r["gateway"].pop("domain"), "tenants.chat.gateway.hostnames"),
    "one hostname for two tenants": (
        lambda r: r["tenants"]["search"]["gateway"].update(hostnames=["chat.llm.aicloud-b.example"]),
        "tenants.search.gateway.hostnames",
    ),
    "scale from zero with flow control off": (_gateway_off, "gateway.router.flowControl.enabled"),
    "scale from zero with no gateway and no activation": (
        lambda r: r["models"]["qwen3-32b-batch"].pop("gateway"),
        "models.qwen3-32b-batch.autoscaling",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_at_its_key(case: str) -> None:
    change, path = REFUSED[case]
    problems = problems_of(mutate(B, change))
    assert path in [p.path for p in problems], problems
    assert all(p.fix for p in problems if p.path == path)


def test_a_request_band_above_the_models_gang_is_warned_about() -> None:
    raw = mutate(B, lambda r: r["tenants"]["search"]["gateway"].update(priorityClass="p0-critical"))
    raw["models"]["qwen3-32b-batch"]["gateway"]["consumers"] = ["search"]
    spec = load(raw)
    assert "models.qwen3-32b-batch.gateway.consumers" in [w.path for w in spec.warnings]


def test_a_queue_shorter_than_the_load_is_warned_about() -> None:
    raw = mutate(B, lambda r: r["gateway"].update(router={"flowControl": {"queueTimeoutSeconds": 120}}))
    assert "gateway.router.flowControl.queueTimeoutSeconds" in [w.path for w in load(raw).warnings]


def test_the_example_has_no_gateway_warning() -> None:
    assert [str(w) for w in load(B).warnings if "gateway" in w.path] == []


def test_consumers_without_the_gateway_are_warned_about() -> None:
    raw = mutate(B, lambda r: r["models"]["bge-reranker"].update(gateway={"consumers": ["chat"]}))
    assert "models.bge-reranker.gateway.consumers" in [w.path for w in load(raw).warnings]


def test_the_example_passes_and_every_refusal_is_one_problem_only() -> None:
    assert load(B).gateway is not None
    assert paths_of(mutate(B, lambda r: r["gateway"].pop("className"))) == ["gateway.className"]


def test_negative_bands_without_flow_control_are_warned_about() -> None:
    """Without flow control the router sheds requests of a negative priority under saturation."""

    def off(r: dict[str, Any]) -> None:
        r["gateway"].update(baselinePriorityClass="p1-high", router={"flowControl": {"enabled": False}})
        r["models"]["qwen3-32b-batch"]["autoscaling"]["minReplicas"] = 1

    warned = [w for w in load(mutate(B, off)).warnings if w.path == "gateway.baselinePriorityClass"]
    assert len(warned) == 1 and "`search`" in warned[0].message
    assert not [w for w in load(B).warnings if w.path == "gateway.baselinePriorityClass"]


@pytest.mark.parametrize(
    ("hostname", "accepted"),
    [
        ("*.chat.llm.aicloud-b.example", True),  # Gateway API's wildcard label, first and alone
        ("chat.llm.aicloud-b.example", True),
        ("10.20.30.40", False),  # no IP address
        ("chat.*.aicloud-b.example", False),
        ("a" * 64 + ".aicloud-b.example", False),  # a label over 63 characters
    ],
)
def test_hostnames_are_gateway_api_hostnames(hostname: str, accepted: bool) -> None:
    raw = mutate(B, lambda d: d["tenants"]["chat"].setdefault("gateway", {}).update(hostnames=[hostname]))
    if accepted:
        assert hostname in load(raw).gateway.hostnames["chat"]  # type: ignore[union-attr]
    else:
        assert paths_of(raw) == ["tenants.chat.gateway.hostnames[0]"]


@pytest.mark.parametrize(
    "problem",
    [dns_label_problem, dns_subdomain_problem, gateway_hostname_problem, label_value_problem, image_reference_problem],
)
def test_a_name_with_a_trailing_newline_is_refused(problem: Any) -> None:
    """Python's `$` matches before a final newline (a YAML block scalar leaves one); the API server's
    patterns do not."""
    assert problem("chat") is None
    assert problem("chat\n") is not None
