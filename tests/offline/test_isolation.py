"""Tenant isolation as the cluster enforces it, proven with the upstream engines (the project's
`tenant-isolation` program: cyclonus' NetworkPolicy matcher, Kubernetes' pod-security-admission)
on what every example stack renders: the truth table of flows (`offline.isolation.flows`), and
every pod of a tenant namespace at the Pod Security level its namespace enforces."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from config.errors import ConfigError
from config.loader import load_raw
from config.upstream.kubernetes import PSA_LABEL_PREFIX
from offline.isolation.engine import PROGRAM, Answers, evaluate
from offline.isolation.flows import Table, truth_table
from offline.programs.build import ProgramUnavailableError
from offline.render import StackRender
from tests.conftest import EXAMPLE_STACKS, PROJECT_DIR, stack_raw


@pytest.fixture(scope="module")
def engine() -> Path:
    """The built program; skipped without Go locally, a failure in CI."""
    try:
        return PROGRAM.ensure_built()
    except ProgramUnavailableError as why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"tenant-isolation cannot be built: {why}")
        pytest.skip(f"tenant-isolation cannot be built here: {why}")


def _table(render: StackRender) -> Table:
    return truth_table(render.spec, [obj.manifest for obj in render.rendered.objects])


def _ask(table: Table, policies: list[Any] | None = None) -> Answers:
    return evaluate(
        table.namespaces, table.policies if policies is None else policies, [f.question() for f in table.flows]
    )


def _disagreements(table: Table, answers: Answers) -> list[str]:
    return [
        f"{flow.name} (port {flow.port_name or flow.port}/{flow.protocol}): promised "
        f"{'allowed' if flow.allowed else 'denied'}, the matcher says {answers.flows[flow.name]}"
        for flow in table.flows
        if answers.flows[flow.name]["allowed"] != flow.allowed
    ]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_the_truth_table_holds_under_the_policy_engine(
    stack: str, engine: Path, committed_render: Callable[[str], StackRender]
) -> None:
    table = _table(committed_render(stack))
    answers = _ask(table)
    assert not _disagreements(table, answers), "\n".join(_disagreements(table, answers))
    denied = [f for f in table.flows if not f.allowed]
    if table.pods:
        assert denied, "the table promises some flow is refused"
        # The control: without the rendered policies every refused flow would pass.
        bare = _ask(table, policies=[])
        assert all(bare.flows[f.name]["allowed"] for f in denied)


def test_decode_reaches_only_its_own_slice_s_prefill(
    engine: Path, committed_render: Callable[[str], StackRender]
) -> None:
    """aicloud-b's prefill/decode model: the address a request's `x-prefiller-host-port` names can
    be its slice's prefill pods, DNS and the hub (its weights come from the hub), nothing else."""
    table = _table(committed_render("aicloud-b"))
    answers = _ask(table)
    decode_flows = {
        f.name: answers.flows[f.name]["allowed"] for f in table.flows if "-decode" in f.name.split(" -> ")[0]
    }
    allowed = sorted(name.split(" -> ")[1] for name, ok in decode_flows.items() if ok)
    assert any("s0-prefill" in name for name in allowed) and any("s1-prefill" in name for name in allowed)
    for name, ok in decode_flows.items():
        source, target = name.split(" -> ")
        if "prefill" in target:
            same_slice = ("-s0-" in source) == ("-s0-" in target)
            assert ok == same_slice, name
        elif target.startswith(("API server", "metadata service", "the public internet on 80")):
            assert not ok, name
        elif "Deployment" in target or "LeaderWorkerSet" in target:
            assert not ok, f"decode reached another tenant's vLLM: {name}"


def test_prefill_and_decode_behind_the_gateway_needs_the_policies() -> None:
    """Without the decode egress policy nothing bounds where a client's prefill header sends the
    prompt: refused at the model's decode role."""
    raw = {**stack_raw("aicloud-b"), "networkPolicies": {"enabled": False}}
    with pytest.raises(ConfigError) as refused:
        load_raw(raw, "aicloud-b", base_dir=PROJECT_DIR)
    assert any(
        p.path == "models.qwen3-235b-pd.roles.decode" and "networkPolicies.enabled" in p.message
        for p in refused.value.problems
    )


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_tenant_pod_passes_its_namespace_s_pod_security_level(
    stack: str, engine: Path, committed_render: Callable[[str], StackRender]
) -> None:
    render = committed_render(stack)
    table = _table(render)
    pods = [_psa_question(table, pod.name, pod.namespace, pod.template) for pod in table.pods]
    answers = evaluate(table.namespaces, [], pods=pods)
    failing = {name: reasons for name, reasons in answers.pods.items() if reasons}
    assert not failing
    assert all(q["level"] in ("baseline", "privileged", "restricted") for q in pods)
    if pods:
        # The control: the same pod with the node's root mounted fails `baseline`.
        pod = copy.deepcopy(pods[0])
        pod["level"] = "baseline"
        pod["spec"].setdefault("volumes", []).append({"name": "root", "hostPath": {"path": "/"}})
        assert evaluate(table.namespaces, [], pods=[pod]).pods[pod["name"]]


def _psa_question(table: Table, name: str, namespace: str, template: dict[str, Any]) -> dict[str, Any]:
    level = table.namespaces[namespace].get(f"{PSA_LABEL_PREFIX}enforce")
    assert level, f"namespace {namespace} enforces no Pod Security level"
    return {"name": name, "level": level, "metadata": template.get("metadata") or {}, "spec": template["spec"]}
