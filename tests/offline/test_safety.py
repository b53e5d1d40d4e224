"""Safe change semantics (stable URNs and names, aliases, replacements) and secret handling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import config
from cli.main import main
from config.stack_file.reader import StackFile
from offline.diff import Entry, _replacement_reason
from offline.engine import run_program
from offline.manifests import from_registrations
from offline.render import StackRender, write_render
from offline.review import diff_dirs
from tests.conftest import PROJECT_DIR, mutate, stack_raw, write_stack

SEED = stack_raw("aicloud-a")


def _leaves(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["topology"]["domains"]["spinepair12"]["domains"]


def _diff(render_raw: Any, tmp_path: Path, before: dict[str, Any], after: dict[str, Any]) -> Any:
    write_render(render_raw(before), tmp_path / "before")
    write_render(render_raw(after), tmp_path / "after")
    result, _ = diff_dirs(tmp_path / "before", tmp_path / "after")
    return result


def _urns(result: StackRender) -> set[str]:
    return {entry["urn"] for entry in result.rendered.index}


def _reordered(raw: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(raw))
    for key in ("tenants", "models"):
        out[key] = dict(reversed(list(out[key].items())))
    _leaves(out)["leafpair12"]["nodes"] = [f"gpu-worker-{i}" for i in range(64, 0, -1)]
    out["topology"]["domains"]["spinepair12"]["domains"] = dict(reversed(list(_leaves(out).items())))
    return out


def test_reordering_tenants_models_and_nodes_changes_nothing(render_raw: Any, tmp_path: Path) -> None:
    before, after = render_raw(SEED), render_raw(_reordered(SEED))
    assert _urns(before) == _urns(after)
    write_render(before, tmp_path / "before")
    write_render(after, tmp_path / "after")
    result, text = diff_dirs(tmp_path / "before", tmp_path / "after")
    assert result.empty, text


def test_adding_a_tenant_adds_only_its_objects(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: r["tenants"].update({"tenantc": {"namespaces": ["c01"]}}))
    result = _diff(render_raw, tmp_path, SEED, after)
    assert result.added == [
        "manifests/Namespace.c01.yaml",
        "manifests/NetworkPolicy.c01.volcano-platform-tenant.yaml",
        "manifests/Queue.tenantc.yaml",
    ]
    assert not (result.changed or result.replaced or result.removed)


def test_removing_a_tenant_removes_only_its_objects(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: r["tenants"].pop("tenantb"))
    result = _diff(render_raw, tmp_path, SEED, after)
    assert [f for f, _ in result.removed] == [
        "manifests/Namespace.b01.yaml",
        "manifests/NetworkPolicy.b01.volcano-platform-tenant.yaml",
        "manifests/Queue.tenantb.yaml",
    ]
    assert not (result.changed or result.replaced or result.added)


def test_removing_a_model_removes_only_its_objects(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: r["models"].pop("qwen8b-preemptor"))
    result = _diff(render_raw, tmp_path, SEED, after)
    assert [f for f, _ in result.removed] == [
        "manifests/Deployment.a01.qwen8b-preemptor.yaml",
        "manifests/Secret.a01.vllm-api-key.yaml",  # its API key, which no other model reads
        "manifests/Service.a01.qwen8b.yaml",
    ]
    assert not (result.changed or result.replaced or result.added)


def test_nodes_come_and_go_one_patch_at_a_time(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: _leaves(r)["leafpair34"].update(nodes=["gpu-worker-[65-127]", "gpu-worker-129"]))
    result = _diff(render_raw, tmp_path, SEED, after)
    assert result.added == ["manifests/NodePatch.gpu-worker-129.yaml"]
    assert result.removed == [("manifests/NodePatch.gpu-worker-128.yaml", " (kept on the cluster: retainOnDelete)")]
    assert not (result.changed or result.replaced)


def test_a_node_moving_leaves_is_an_update_of_its_labels(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: _leaves(r)["leafpair12"].update(nodes=["gpu-worker-[1-63]"]))
    _leaves(after)["leafpair34"]["nodes"] = ["gpu-worker-[64-128]"]
    result = _diff(render_raw, tmp_path, SEED, after)
    assert result.changed == ["manifests/NodePatch.gpu-worker-64.yaml"]
    assert not (result.added or result.removed or result.replaced)


def test_a_model_changing_kind_keeps_its_service_through_an_alias(render_raw: Any, tmp_path: Path) -> None:
    after = mutate(SEED, lambda r: r["models"]["qwen8b-preemptor"].update(nodesPerReplica=2))
    after["models"]["qwen8b-preemptor"]["engine"]["pipelineParallelSize"] = 2
    result = _diff(render_raw, tmp_path, SEED, after)
    assert "manifests/Service.a01.qwen8b.yaml" in result.changed  # same Service, new selector: in place
    assert [f for f, _ in result.removed] == ["manifests/Deployment.a01.qwen8b-preemptor.yaml"]
    assert set(result.added) == {
        "manifests/LeaderWorkerSet.a01.qwen8b-preemptor.yaml",
        "manifests/PodGroup.a01.qwen8b-preemptor.yaml",
    }
    index = {e["urn"].split("::")[-1]: e for e in render_raw(after).rendered.index}
    assert index["model-qwen8b-preemptor"]["aliases"] == ["type=volcano-platform:inference:SingleNodeModel"]


def test_an_unaliased_urn_change_of_a_fixed_name_is_a_replacement() -> None:
    old = Entry("urn:a::x", "manifests/Service.ns.s.yaml", "kind: Service\n", {})
    new = Entry("urn:b::x", "manifests/Service.ns.s.yaml", old.text, {}, aliased=False)
    assert "without an alias" in str(_replacement_reason(old, new))
    assert _replacement_reason(old, Entry("urn:b::x", old.file, old.text, {}, aliased=True)) is None


def test_fixed_names_are_freed_before_replacement(committed_render: Any) -> None:
    index = committed_render("aicloud-a").rendered.index
    by_type: dict[str, list[dict[str, Any]]] = {}
    for entry in index:
        by_type.setdefault(entry["type"].rsplit(":", 1)[-1], []).append(entry)
    for kind in ("Queue", "PodGroup", "LeaderWorkerSet", "Deployment", "Service", "PriorityClass"):
        assert all(e.get("deleteBeforeReplace") for e in by_type[kind]), kind


# -- secrets --------------------------------------------------------------------------------------

SECRET_VALUES = {
    "hf-token": "hf_Zq8VERYSECRETtoken",
    "registry-password": "p4ss-W0rd-never-shown",
    "vllm-api-key": "sk-api-key-never-shown",
}
KUBECONFIG = "apiVersion: v1\nclusters: [{name: c, cluster: {server: https://10.0.0.1, token: kube-TOKEN-xyz}}]\n"


def _secret_stack() -> dict[str, Any]:
    raw = stack_raw("aicloud-a")
    raw["secrets"] = {**raw["secrets"], **SECRET_VALUES}
    raw["cluster"]["kubeconfig"] = KUBECONFIG
    raw["registries"] = {
        "mars-registry": {"server": "10.8.17.100:60066", "username": "svc", "passwordSecret": "registry-password"}
    }
    model = raw["models"]["qwen8b-preemptor"]
    model["env"]["HF_TOKEN_FOR_HUB"] = {"secret": "hf-token"}
    model["imagePullSecrets"] = ["mars-registry"]
    return raw


def test_secret_values_never_reach_the_render(tmp_path: Path) -> None:
    """Run the program the way the engine does: decrypted values, keys marked secret."""
    raw = _secret_stack()
    stack = StackFile(
        stack="secrets",
        path=None,
        raw=raw,
        pulumi_config={f"volcano-platform:{k}": json.dumps(v) for k, v in raw.items()},
        secret_keys={"volcano-platform:secrets", "volcano-platform:cluster"},
    )
    run = run_program(PROJECT_DIR, stack)
    assert run.config_error is None and run.spec is not None
    rendered_stack = from_registrations(run.registrations, run.outputs)
    write_render(StackRender(PROJECT_DIR, stack, run.spec, rendered_stack, run), tmp_path)
    rendered = "\n".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    for value in (*SECRET_VALUES.values(), "kube-TOKEN-xyz"):
        assert value not in rendered
    assert "[secret]" in (tmp_path / "manifests" / "Secret.a01.hf-token.yaml").read_text()
    provider = next(
        e
        for e in yaml.safe_load((tmp_path / "resources.yaml").read_text())
        if e["type"] == "pulumi:providers:kubernetes"
    )
    assert provider["inputs"]["kubeconfig"] == "[secret]"


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["secrets"].update({"Bad_Name": "hf_Zq8VERYSECRETtoken"}),
        lambda r: r["secrets"].update({"hf-token": 12345678}),
        lambda r: r["cluster"].update(kubeconfig=["kube-TOKEN-xyz"]),
        lambda r: r["registries"]["mars-registry"].update(passwordSecret="missing"),
    ],
)
def test_secret_values_never_reach_error_messages(change: Any) -> None:
    raw = mutate(_secret_stack(), change)
    with pytest.raises(config.ConfigError) as caught:
        config.load_raw(raw, "secrets")
    text = str(caught.value)
    for value in (*SECRET_VALUES.values(), "kube-TOKEN-xyz", "12345678"):
        assert value not in text


def test_plaintext_secrets_in_a_stack_file_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_stack(tmp_path / "Pulumi.plain.yaml", {**stack_raw("dev"), "secrets": {"hf-token": "hf_plain"}})
    assert main(["render", "--stack", "plain", "--config-file", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "secrets.hf-token: secret value is stored in plain text" in err and "hf_plain" not in err


def test_a_secret_and_a_registry_with_one_name_in_one_namespace_are_refused() -> None:
    raw = _secret_stack()
    raw["registries"]["hf-token"] = raw["registries"].pop("mars-registry")
    raw["models"]["qwen8b-preemptor"]["imagePullSecrets"] = ["hf-token"]
    raw["modelDefaults"]["imagePullSecrets"] = ["hf-token"]
    (problem,) = [p for p in _problems(raw) if p.path == "registries.hf-token"]
    assert "`secrets.hf-token` and `registries.hf-token` would both become the Secret `hf-token`" in problem.message


def _problems(raw: dict[str, Any]) -> list[config.Problem]:
    with pytest.raises(config.ConfigError) as caught:
        config.load_raw(raw, "secrets")
    return list(caught.value.problems)


def test_secret_resource_names_cannot_collide_across_namespaces(render_raw: Any) -> None:
    """Namespace `a` with secret `b-c` and namespace `a-b` with secret `c` once shared a resource
    name; with `/` between the parts (which names cannot contain) they never do."""
    raw = stack_raw("dev")
    raw["tenants"] = {"a": {}, "a-b": {}}
    raw["secrets"] = {"b-c": "[secret]", "c": "[secret]"}
    model = raw["models"].pop("qwen3-0-6b")
    raw["models"] = {
        "one": {**model, "tenant": "a", "env": {"X": {"secret": "b-c"}}},
        "two": {**model, "tenant": "a-b", "env": {"X": {"secret": "c"}}},
    }
    stack = StackFile(
        stack="names",
        path=None,
        raw=raw,
        pulumi_config={f"volcano-platform:{k}": json.dumps(v) for k, v in raw.items()},
        secret_keys={"volcano-platform:secrets"},
    )
    run = run_program(PROJECT_DIR, stack)
    assert run.config_error is None and not run.duplicates
    names = sorted(r.name for r in run.registrations if r.type == "kubernetes:core/v1:Secret")
    assert names == ["secrets/a-b/c", "secrets/a/b-c"]
    aliases = {r.name: r.aliases for r in run.registrations if r.type == "kubernetes:core/v1:Secret"}
    assert aliases["secrets/a/b-c"] == ["name=secrets-a-b-c"]  # the name earlier versions gave it


# -- identities -------------------------------------------------------------------------------------


def _provider(result: StackRender) -> dict[str, Any]:
    return next(e for e in result.rendered.index if e["type"] == "pulumi:providers:kubernetes")


def test_the_cluster_identifier_defaults_to_the_stack_name_not_the_display_name(render_raw: Any) -> None:
    renamed = mutate(SEED, lambda r: r["cluster"].update(name="AI cloud A (Shanghai)"))
    assert _provider(render_raw(renamed, stack="aicloud-a"))["inputs"]["clusterIdentifier"] == "aicloud-a"
    pinned = mutate(SEED, lambda r: r["cluster"].update(identifier="aicloud-a-prod"))
    assert _provider(render_raw(pinned, stack="aicloud-a"))["inputs"]["clusterIdentifier"] == "aicloud-a-prod"


def test_renaming_the_cluster_replaces_nothing(render_raw: Any, tmp_path: Path) -> None:
    before = render_raw(SEED, stack="aicloud-a")
    after = render_raw(mutate(SEED, lambda r: r["cluster"].update(name="renamed")), stack="aicloud-a")
    write_render(before, tmp_path / "before")
    write_render(after, tmp_path / "after")
    result, text = diff_dirs(tmp_path / "before", tmp_path / "after")
    assert result.provider_replaced is None and not result.replaced, text


def test_a_new_cluster_identifier_is_loud(render_raw: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = render_raw(SEED, stack="aicloud-a")
    after = render_raw(mutate(SEED, lambda r: r["cluster"].update(identifier="elsewhere")), stack="aicloud-a")
    write_render(before, tmp_path / "before")
    write_render(after, tmp_path / "after")
    assert main(["diff", str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("PROVIDER REPLACED: every resource is replaced")
    assert "`clusterIdentifier` changes from 'aicloud-a' to 'elsewhere'" in out
    result, _ = diff_dirs(tmp_path / "before", tmp_path / "after")
    assert len(result.replaced) == len(before.rendered.objects) + len(before.rendered.releases)
    assert all(why == "the Kubernetes provider is replaced" for _, why in result.replaced)


def test_the_default_queue_patch_forces_the_scheduler_owned_fields(committed_render: Any) -> None:
    (patch,) = [o for o in committed_render("aicloud-a").rendered.objects if o.patch and o.kind == "Queue"]
    assert patch.manifest["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}


def test_tenant_queues_force_the_parent_volcano_co_owns(committed_render: Any) -> None:
    """Volcano's queue controller sets `spec.parent: root` on a queue made without one, so moving a
    tenant under a parent later conflicts unless the stack's apply forces it (it did, for real:
    `tests/e2e/test_whatif_real.py`)."""
    queues = [o for o in committed_render("aicloud-eks").rendered.by_kind("Queue") if not o.patch]
    assert queues and all(q.manifest["metadata"]["annotations"]["pulumi.com/patchForce"] == "true" for q in queues)


def test_tenant_namespaces_are_retained_unless_the_tenant_says_otherwise(render_raw: Any, tmp_path: Path) -> None:
    released = mutate(SEED, lambda r: r["tenants"]["tenantb"].update(retainNamespaces=False))
    index = {e["urn"].split("::")[-1]: e for e in render_raw(released).rendered.index}
    assert index["tenants-namespace-a01"].get("retainOnDelete") is True
    assert "retainOnDelete" not in index["tenants-namespace-b01"]
    without_b = mutate(SEED, lambda r: r["tenants"].pop("tenantb"))
    without_b["models"] = {k: v for k, v in without_b["models"].items() if v.get("tenant") != "tenantb"}
    result = _diff(render_raw, tmp_path, SEED, without_b)
    assert ("manifests/Namespace.b01.yaml", " (kept on the cluster: retainOnDelete)") in result.removed


def test_moving_helms_records_updates_the_provider_and_replaces_nothing(render_raw: Any, tmp_path: Path) -> None:
    """`cluster.helmReleaseStorage` becomes the provider's `helmReleaseSettings.driver`; with the
    cluster identifier unchanged, pulumi-kubernetes updates the provider in place (DiffConfig)."""
    before = render_raw(mutate(SEED, lambda r: r["cluster"].pop("helmReleaseStorage")), stack="aicloud-a")
    after = render_raw(SEED, stack="aicloud-a")
    assert "helmReleaseSettings" not in _provider(before)["inputs"]
    # Object-valued provider settings travel as JSON text (the provider unmarshals them in Configure).
    assert json.loads(_provider(after)["inputs"]["helmReleaseSettings"]) == {"driver": "configmap"}
    write_render(before, tmp_path / "before")
    write_render(after, tmp_path / "after")
    result, text = diff_dirs(tmp_path / "before", tmp_path / "after")
    assert result.provider_replaced is None and not result.replaced and not result.changed, text
    assert (
        '~ the Kubernetes provider, in place: `helmReleaseSettings` changes from unset to {"driver": "configmap"}'
        in text
    )
    assert "0 added, 0 changed, 0 replaced, 0 removed, the provider updated" in text
