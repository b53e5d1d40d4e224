"""Guardrails that the stack-file corpus cannot reach, and the facts the new rules share with
other layers: the rendered-object cap (a workload over etcd's request limit needs a config larger
than the CLI hands over, so only included files or the engine's own path reach it), pull-secret
matching, image builds and the model label of the monitors."""

from __future__ import annotations

import pytest

from config.checks.credentials import server_matches
from config.checks.models import MAX_OBJECT_BYTES
from config.checks.vllm import image_build
from tests.components.helpers import DEPLOY_MODEL, LWS_MODEL, SEED
from tests.conftest import load, mutate, paths_of, problems_of, stack_raw

BLOB = "x" * 8192


def test_the_object_cap_is_etcds_default_request_limit() -> None:
    assert MAX_OBJECT_BYTES == 1_572_864  # etcd --max-request-bytes default, 1.5 MiB


def test_a_workload_over_the_object_cap_is_refused_at_its_largest_part() -> None:
    env = {f"BLOB_{i:03d}": BLOB for i in range(200)}
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(env=env))
    problems = [p for p in problems_of(raw) if p.path == f"models.{DEPLOY_MODEL}.env"]
    assert problems and "1.5 MiB" in problems[0].message


def test_an_lws_counts_both_templates() -> None:
    # 100 x 8 KiB is under the cap once, over it twice (leader and worker templates).
    env = {f"BLOB_{i:03d}": BLOB for i in range(100)}
    assert f"models.{LWS_MODEL}.env" in paths_of(mutate(SEED, lambda r: r["models"][LWS_MODEL]["env"].update(env)))
    load(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["env"].update(env)))


def test_an_inherited_oversized_env_is_reported_once_at_model_defaults() -> None:
    env = {f"BLOB_{i:03d}": BLOB for i in range(200)}
    raw = mutate(SEED, lambda r: r["modelDefaults"].update(env=env))
    for model in raw["models"].values():
        model.pop("env", None)
    problems = [p for p in problems_of(raw) if p.path.endswith(".env") or p.path == "modelDefaults.env"]
    assert [p.path for p in problems] == ["modelDefaults.env"]
    assert "inherited by" in problems[0].message


@pytest.mark.parametrize(
    ("server", "image", "used"),
    [
        ("10.8.17.100:60066", "10.8.17.100:60066/mars/vllm:1", True),
        ("10.8.17.100:60066", "10.8.17.100:60067/mars/vllm:1", False),
        ("harbor.example.com/team", "harbor.example.com/team/vllm:1", True),
        ("harbor.example.com/team", "harbor.example.com/teams/vllm:1", False),
        ("docker.io", "vllm/vllm-openai:v0.33.0", True),
        ("index.docker.io", "ubuntu:24.04", True),
        ("Harbor.Example.com", "harbor.example.com/x/y:1", True),
        ("quay.io", "vllm/vllm-openai:v0.33.0", False),
    ],
)
def test_pull_secrets_match_as_the_kubelet_matches_them(server: str, image: str, used: bool) -> None:
    assert server_matches(server, image) is used


@pytest.mark.parametrize(
    ("image", "vendors"),
    [
        ("vllm/vllm-openai:v0.33.0", {"nvidia", "metax"}),
        ("harbor.example.com/mirror/vllm:v0.19.0-cu130", {"nvidia", "metax"}),
        ("rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210", {"amd"}),
        ("quay.io/ascend/vllm-ascend:v0.11.0rc1", {"ascend"}),
        ("10.8.17.100:60066/mars/vllm-mars:0.11.0-hpcc", {"metax"}),
    ],
)
def test_image_builds_are_read_from_the_name(image: str, vendors: set[str]) -> None:
    found = image_build(image)
    assert found is not None and found[1] == vendors


def test_an_image_whose_name_says_nothing_is_not_judged() -> None:
    assert image_build("registry.local/inference/server:2025.1") is None


def test_helms_records_in_secrets_are_warned_about_until_the_stack_chooses() -> None:
    unset = mutate(stack_raw("aicloud-a"), lambda r: r["cluster"].pop("helmReleaseStorage"))
    (warning,) = [w for w in load(unset).warnings if w.path == "cluster.helmReleaseStorage"]
    assert "Volcano and LWS" in warning.message and "configmap" in warning.fix
    chosen = mutate(unset, lambda r: r["cluster"].update(helmReleaseStorage="secret"))
    assert "cluster.helmReleaseStorage" not in [w.path for w in load(chosen).warnings]
    no_chart = mutate(unset, lambda r: r.update(volcano={"install": False}, lws={"install": False}))
    assert "cluster.helmReleaseStorage" not in [w.path for w in load(no_chart).warnings]


def test_adopting_a_release_while_helms_records_are_configmaps_is_warned_about() -> None:
    adopting = mutate(stack_raw("aicloud-a"), lambda r: r["volcano"].update(adopt=True))
    assert "volcano.adopt" in [w.path for w in load(adopting).warnings]
    in_secrets = mutate(adopting, lambda r: r["cluster"].update(helmReleaseStorage="secret"))
    assert "volcano.adopt" not in [w.path for w in load(in_secrets).warnings]


@pytest.mark.parametrize(
    ("query", "one"),
    [
        ("sum(rate(gateway_requests_total[2m]))", True),
        ("sum(x) or vector(0)", True),
        ("-sum(x)", True),
        ("max_over_time(sum(x)[5m:1m])", True),
        ("histogram_quantile(0.9, sum by (le) (rate(x[5m])))", True),
        ("absent(x)", True),
        ("topk(1, x)", True),
        ("rate(gateway_requests_total[2m])", False),
        ("sum by (route) (x)", False),
        ("sum without (pod) (x)", False),
        ("topk(2, x)", False),
        ("max_over_time(x[5m])", False),
        ("histogram_quantile(0.9, sum by (le, pod) (rate(x[5m])))", False),
        ("sum(x) + rate(y[1m])", False),
    ],
)
def test_a_wake_up_query_returns_one_series_by_its_shape(query: str, one: bool) -> None:
    import promql_parser

    from config.schema.promql_shape import returns_one_series

    assert returns_one_series(promql_parser.parse(query)) is one


@pytest.mark.parametrize(
    ("query", "empty"),
    [
        ("sum(a) + sum(rate(b[1m]))", True),
        ("sum(a) / sum(b)", True),
        ("(sum(a) or vector(0)) + (sum(rate(b[1m])) or vector(0))", False),
        ("sum(rate(gateway_requests_total[2m]))", False),
        ("sum(x) * 2", False),
        ("sum(a) or sum(b)", False),
    ],
)
def test_an_operation_with_a_side_that_can_be_empty_is_found(query: str, empty: bool) -> None:
    import promql_parser

    from config.schema.promql_shape import empty_operand

    assert empty_operand(promql_parser.parse(query)) is empty
