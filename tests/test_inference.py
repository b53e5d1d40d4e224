"""Per-model inference stacks: the seed's two models, pod templates, PodGroups, LWS, Services."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from config.vllm_releases import REMOVED_FLAGS as VLLM_REMOVED_FLAGS
from offline.diff import diff_dirs
from offline.render import write_render
from offline.schemas import validate_objects
from tests.conftest import load, mutate, paths_of, problems_of, stack_raw

SEED = stack_raw("aicloud-a")
LWS_MODEL, DEPLOY_MODEL = "qwen2-72b-tenanta", "qwen8b-preemptor"
GPU = "mars-tech.com/gpu"


def _objects(result: Any) -> dict[str, dict[str, Any]]:
    return {o.kind: o.manifest for o in result.rendered.objects if o.namespace == "a01"}


def _container(template: dict[str, Any]) -> dict[str, Any]:
    (container,) = template["spec"]["containers"]
    return container


def _argv(container: dict[str, Any]) -> list[str]:
    """The vLLM command line of a server container or a leader's script."""
    if container["command"][:2] == ["/bin/sh", "-c"]:
        line = next(line for line in container["args"][0].splitlines() if line.startswith("exec vllm"))
        return shlex.split(line)[1:]
    return container["command"] + container["args"]


def test_seed_single_node_model_is_a_deployment(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    deployment = result.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest
    template = deployment["spec"]["template"]
    assert template["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "tenanta"
    assert template["metadata"]["labels"]["app"] == "qwen8b"
    spec = template["spec"]
    assert spec["schedulerName"] == "volcano" and spec["priorityClassName"] == "p0-critical"
    assert spec["enableServiceLinks"] is False
    container = _container(template)
    assert (
        container["resources"]["requests"]
        == container["resources"]["limits"]
        == {"cpu": "12", "memory": "48Gi", GPU: "1"}
    )
    argv = _argv(container)
    assert argv[:3] == ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--model") + 1] == "/workspace/model/Qwen3-8B"
    assert argv[argv.index("--served-model-name") + 1] == "Qwen3-8B"
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in argv
    overrides = json.loads(argv[argv.index("--hf-overrides") + 1])
    assert overrides == {
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        "rope_theta": 1000000,
    }
    assert {"--trust-remote-code", "--enforce-eager"} <= set(argv) and "--rope-scaling" not in argv
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.95"
    service = result.rendered.find("Service", "qwen8b", "a01").manifest
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]


def test_seed_multi_node_model_is_a_gang_scheduled_leaderworkerset(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    lws = result.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2 and template["restartPolicy"] == "RecreateGroupOnPodRestart"
    for role in ("leaderTemplate", "workerTemplate"):
        pod = template[role]
        annotations = pod["metadata"]["annotations"]
        assert annotations["scheduling.volcano.sh/queue-name"] == "tenanta"
        assert annotations["scheduling.k8s.io/group-name"] == LWS_MODEL
        assert json.loads(annotations["k8s.v1.cni.cncf.io/networks"]) == [
            {"name": "compute-a-net01", "namespace": "nad"},
            {"name": "compute-b-net01", "namespace": "nad"},
        ]
        assert pod["spec"]["schedulerName"] == "volcano" and pod["spec"]["priorityClassName"] == "p0-critical"
        assert pod["spec"]["securityContext"]["seccompProfile"]["type"] == "Unconfined"
        container = _container(pod)
        requests = {"cpu": "12", "memory": "64Gi", GPU: "8", "rdma/hca_cpta": "1", "rdma/hca_cptb": "1"}
        assert container["resources"] == {"requests": requests, "limits": requests}
        assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["NCCL_SOCKET_IFNAME"] == "net1" and env["NCCL_IB_HCA"] == "mlx5_0,mlx5_4"
        assert "VLLM_HOST_IP" in env
        assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "32Gi"}
        assert volumes["model"]["nfs"]["server"] == "10.8.7.133" and volumes["model"]["nfs"]["readOnly"] is True
    leader = _container(template["leaderTemplate"])
    argv = _argv(leader)
    assert argv[:3] == ["vllm", "serve", "/workspace/model/Qwen2-72B"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--pipeline-parallel-size") + 1] == "2"
    assert argv[argv.index("--distributed-executor-backend") + 1] == "ray"
    assert argv[argv.index("--dtype") + 1] == "bfloat16" and argv[argv.index("--max-model-len") + 1] == "4096"
    assert "--swap-space" not in argv
    assert leader["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert leader["startupProbe"]["failureThreshold"] * leader["startupProbe"]["periodSeconds"] >= 1800
    worker = _container(template["workerTemplate"])
    assert 'ray start --address="$LWS_LEADER_ADDRESS:6379" --num-gpus=8' in worker["args"][0]
    # Workers wait for the head first: a worker restart would recreate the whole group.
    assert worker["args"][0].index("ray status --address") < worker["args"][0].index("exec ray start")
    assert "startupProbe" not in worker and "ports" not in worker


def test_leaderworkerset_spells_out_the_webhook_defaults(committed_render: Any) -> None:
    lws = committed_render("aicloud-a").rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest["spec"]
    assert lws["replicas"] == 1 and lws["startupPolicy"] == "LeaderCreated"
    assert lws["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0},
    }
    assert lws["networkConfig"] == {"subdomainPolicy": "Shared"}


def test_one_pod_group_per_model_gangs_each_group_with_its_topology(committed_render: Any) -> None:
    group = committed_render("aicloud-a").rendered.find("PodGroup", LWS_MODEL, "a01").manifest["spec"]
    assert group["minMember"] == 2 and group["queue"] == "tenanta" and group["priorityClassName"] == "p0-critical"
    assert group["minResources"] == {
        "cpu": "24",
        "memory": "128Gi",
        GPU: "16",
        "rdma/hca_cpta": "2",
        "rdma/hca_cptb": "2",
    }
    assert group["subGroupPolicy"] == [
        {
            "name": "lws-group",
            "subGroupSize": 2,
            "labelSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": LWS_MODEL}},
            "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-index"],
            "networkTopology": {"mode": "soft"},
        }
    ]
    assert "networkTopology" not in group  # a job-level constraint would squeeze all replicas into one domain


@pytest.mark.parametrize(
    "constraint, rendered",
    [
        ({"mode": "hard", "highestTier": 1}, {"mode": "hard", "highestTierAllowed": 1}),
        (
            {"mode": "hard", "highestTierName": "topology.aicloud/spine-pair"},
            {"mode": "hard", "highestTierName": "topology.aicloud/spine-pair"},
        ),
    ],
)
def test_hard_constraints_render_on_the_subgroup(
    constraint: dict[str, Any], rendered: dict[str, Any], render_raw: Any
) -> None:
    raw = mutate(SEED, lambda r: r["models"][LWS_MODEL].update(topology=constraint))
    group = render_raw(raw).rendered.find("PodGroup", LWS_MODEL, "a01").manifest["spec"]
    assert group["subGroupPolicy"][0]["networkTopology"] == rendered


def test_leader_service_selects_leaders_only(committed_render: Any) -> None:
    service = committed_render("aicloud-a").rendered.find("Service", "qwen2-72b-leader", "a01").manifest
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": LWS_MODEL,
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }
    assert service["spec"]["type"] == "ClusterIP"


def test_model_objects_wait_for_what_they_need(committed_render: Any) -> None:
    index = {e["urn"].split("::")[-1]: e for e in committed_render("aicloud-a").rendered.index}
    lws = {d.split("::")[-1] for d in index[f"model-{LWS_MODEL}-lws"]["dependsOn"]}
    assert {
        "tenants-namespace-a01",
        "tenants-queue-tenanta",
        "priority-p0-critical",
        "lws-release",
        f"model-{LWS_MODEL}-podgroup",
    } <= lws
    deployment = {d.split("::")[-1] for d in index[f"model-{DEPLOY_MODEL}-deployment"]["dependsOn"]}
    assert {"tenants-namespace-a01", "tenants-queue-tenanta", "priority-p0-critical"} <= deployment
    assert index[f"model-{DEPLOY_MODEL}-deployment"]["deleteBeforeReplace"] is True


def test_rendered_workloads_pass_kubernetes_validation(committed_render: Any) -> None:
    for stack in ("aicloud-a", "dev"):
        objects = [o for o in committed_render(stack).rendered.objects if o.kind in ("Deployment", "Service", "Secret")]
        report = validate_objects(objects, "1.33")
        assert report.issues == [] and report.checked == len(objects) > 0


def test_leaderworkersets_and_podgroups_validate_against_the_crds(committed_render: Any) -> None:
    objects = [o for o in committed_render("aicloud-a").rendered.objects if o.kind in ("LeaderWorkerSet", "PodGroup")]
    report = validate_objects(objects, "1.33")
    assert report.issues == [] and report.checked == 2


@pytest.mark.parametrize("stack", ["aicloud-a", "dev"])
def test_generated_command_lines_have_no_flag_current_vllm_rejects(stack: str, committed_render: Any) -> None:
    result = committed_render(stack)
    for workload in result.rendered.objects:
        if workload.kind not in ("Deployment", "LeaderWorkerSet"):
            continue
        model = result.spec.models[workload.name]
        templates = (
            [workload.manifest["spec"]["template"]]
            if workload.kind == "Deployment"
            else [workload.manifest["spec"]["leaderWorkerTemplate"]["leaderTemplate"]]
        )
        for template in templates:
            argv = _argv(_container(template))
            for flag, (since, _) in VLLM_REMOVED_FLAGS.items():
                assert flag not in argv or model.vllm_version < since, f"{workload.name}: {flag}"


def test_leader_and_worker_scripts_are_valid_shell(committed_render: Any) -> None:
    lws = committed_render("aicloud-a").rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    for role in ("leaderTemplate", "workerTemplate"):
        script = _container(lws["spec"]["leaderWorkerTemplate"][role])["args"][0]
        assert subprocess.run(["sh", "-n", "-c", script], capture_output=True).returncode == 0


def test_changing_replicas_changes_only_that_model(tmp_path: Path, render_raw: Any) -> None:
    write_render(render_raw(SEED), tmp_path / "old")
    write_render(render_raw(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(replicas=3))), tmp_path / "new")
    result, _ = diff_dirs(tmp_path / "old", tmp_path / "new")
    assert result.changed == [f"manifests/Deployment.a01.{DEPLOY_MODEL}.yaml"]
    assert not (result.added or result.removed or result.replaced)


# -- model config checks --------------------------------------------------------------------------


def test_parallelism_must_match_the_gpus_of_a_replica() -> None:
    problem = next(
        p
        for p in problems_of(mutate(SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(tensorParallelSize=4)))
        if p.path == f"models.{LWS_MODEL}.engine"
    )
    assert "4 x 2 = 8, but a replica has 8 GPU(s) x 2 node(s) = 16" in problem.message
    assert (
        load(
            mutate(
                SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(tensorParallelSize=16, pipelineParallelSize=1)
            )
        )
        .models[LWS_MODEL]
        .config.tensor_parallel
        == 16
    )


def test_removed_flags_are_rejected_for_current_vllm_only() -> None:
    args = ["--swap-space", "16"]
    old = mutate(SEED, lambda r: r["models"][LWS_MODEL]["engine"].update(extraArgs=args))
    assert load(old).models[LWS_MODEL].vllm_version == (0, 11, 0)  # read from the image tag
    new = mutate(old, lambda r: r["models"][LWS_MODEL].update(vllmVersion="0.33.0"))
    problem = next(p for p in problems_of(new) if p.path == f"models.{LWS_MODEL}.engine.extraArgs[0]")
    assert "removed in vLLM 0.18" in problem.message
    rope = mutate(
        SEED,
        lambda r: r["models"][DEPLOY_MODEL].update(
            image="vllm/vllm-openai:v0.33.0", engine={"extraArgs": ["--rope-scaling={}"]}
        ),
    )
    assert f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths_of(rope)


def test_flags_the_platform_sets_are_not_repeated() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(extraArgs=["--port=9000", "-tp", "1"]))
    paths = paths_of(raw)
    assert (
        f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths and f"models.{DEPLOY_MODEL}.engine.extraArgs[1]" in paths
    )


def test_topology_constraints_need_a_multi_node_model() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(topology={"mode": "soft"}))
    assert f"models.{DEPLOY_MODEL}.topology" in paths_of(raw)


def test_plain_text_credentials_in_env_are_refused() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["env"].update(HF_API_TOKEN="hf_secret_value"))
    problem = next(p for p in problems_of(raw) if p.path == f"models.{DEPLOY_MODEL}.env.HF_API_TOKEN")
    assert "hf_secret_value" not in str(problem) and "pulumi config set --secret" in problem.fix


def test_unpinned_images_are_refused() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image="vllm/vllm-openai:latest"))
    assert f"models.{DEPLOY_MODEL}.image" in paths_of(raw)


def test_secrets_become_kubernetes_secrets_referenced_by_name(render_raw: Any) -> None:
    encrypted = {"secure": "v1:c2FsdA==:Y2lwaGVy"}  # what `pulumi config set --secret` writes
    raw = mutate(
        SEED,
        lambda r: r.update(
            secrets={**r["secrets"], "hf-token": encrypted, "registry-password": encrypted},
            registries={
                "mars-registry": {
                    "server": "10.8.17.100:60066",
                    "username": "svc",
                    "passwordSecret": "registry-password",
                }
            },
        ),
    )
    raw["models"][DEPLOY_MODEL]["env"]["HF_TOKEN_FILE_HINT"] = {"secret": "hf-token"}
    raw["models"][DEPLOY_MODEL]["imagePullSecrets"] = ["mars-registry"]
    result = render_raw(raw)
    deployment = result.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest
    container = _container(deployment["spec"]["template"])
    assert {
        "name": "HF_TOKEN_FILE_HINT",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "value"}},
    } in container["env"]
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "mars-registry"}]
    secret = result.rendered.find("Secret", "hf-token", "a01").manifest
    assert secret["type"] == "Opaque" and secret["stringData"] == {"value": "[secret]"}
    pull = result.rendered.find("Secret", "mars-registry", "a01").manifest
    assert pull["type"] == "kubernetes.io/dockerconfigjson" and pull["stringData"] == {".dockerconfigjson": "[secret]"}


def test_pulumi_up_waits_as_long_as_the_weights_take(committed_render: Any, render_raw: Any) -> None:
    index = {e["urn"].split("::")[-1]: e for e in committed_render("aicloud-a").rendered.index}
    assert index[f"model-{DEPLOY_MODEL}-deployment"]["customTimeouts"] == {"create": "1500s", "update": "1500s"}
    scaled = render_raw(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(replicas=3)))
    entry = next(e for e in scaled.rendered.index if e["urn"].endswith(f"::model-{DEPLOY_MODEL}-deployment"))
    assert entry["customTimeouts"] == {"create": "1500s", "update": "3300s"}  # one replica at a time
    for service in committed_render("aicloud-a").rendered.by_kind("Service"):
        assert service.manifest["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}


def test_env_the_platform_sets_is_reserved_only_where_it_sets_it() -> None:
    raw = mutate(SEED, lambda r: r["secrets"].update({"hf-token": "x"}))
    raw["models"][DEPLOY_MODEL]["env"]["HF_TOKEN"] = {"secret": "hf-token"}
    raw["models"][DEPLOY_MODEL]["env"]["VLLM_HOST_IP"] = "10.0.0.1"
    assert load(raw).models[DEPLOY_MODEL].config.env["VLLM_HOST_IP"] == "10.0.0.1"
    raw["models"][LWS_MODEL]["env"]["VLLM_HOST_IP"] = "10.0.0.1"
    assert paths_of(raw) == [f"models.{LWS_MODEL}.env.VLLM_HOST_IP"]


# -- what the pinned vLLM releases really do ---------------------------------------------------------


def _deploy_argv(result: Any) -> list[str]:
    return _argv(_container(result.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]))


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_the_engine_ready_timeout_is_raised_only_where_vllm_reads_it(committed_render: Any, render_raw: Any) -> None:
    """0.11 hard-codes the 600 s wait: no variable, a warning that names the consequence."""
    example = committed_render("aicloud-a")
    deployment = example.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in _env(_container(deployment["spec"]["template"]))
    warning = next(w for w in example.spec.warnings if w.path == f"models.{DEPLOY_MODEL}.startup.loadTimeoutSeconds")
    assert "waits at most 600 s" in warning.message and "vLLM >= 0.14.0" in warning.fix
    newer = render_raw(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(vllmVersion="0.14.0")))
    template = newer.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]
    assert _env(_container(template))["VLLM_ENGINE_READY_TIMEOUT_S"] == "900"
    assert not [w for w in newer.spec.warnings if w.path == f"models.{DEPLOY_MODEL}.startup.loadTimeoutSeconds"]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.19.0", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}),
        (
            "0.33.0",
            {
                "rope_parameters": {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 32768,
                    "rope_theta": 1000000,
                }
            },
        ),
    ],
)
def test_rope_scaling_takes_the_form_the_images_transformers_keeps_theta_in(
    render_raw: Any, version: str, expected: dict[str, Any]
) -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(vllmVersion=version))
    overrides = json.loads(_deploy_argv(render_raw(raw))[_deploy_argv(render_raw(raw)).index("--hf-overrides") + 1])
    if version == "0.19.0":
        expected = {**expected, "rope_theta": 1000000}
    assert overrides == expected


def test_rope_scaling_without_theta_is_refused_on_transformers_v5_images() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(vllmVersion="0.33.0"))
    del raw["models"][DEPLOY_MODEL]["engine"]["ropeTheta"]
    assert paths_of(raw) == [f"models.{DEPLOY_MODEL}.engine.ropeTheta"]
    raw["models"][DEPLOY_MODEL]["engine"] = {"hfOverrides": {"rope_scaling": {"rope_type": "yarn", "factor": 2.0}}}
    assert f"models.{DEPLOY_MODEL}.engine.hfOverrides.rope_scaling" in paths_of(raw)


@pytest.mark.parametrize("flag", sorted(VLLM_REMOVED_FLAGS))
def test_every_removed_flag_is_refused_from_its_release_on(flag: str) -> None:
    since = VLLM_REMOVED_FLAGS[flag][0]
    before = (since[0], since[1] - 1, 0) if since[1] else (0, 7, 0)
    for version, refused in ((since, True), (before, False)):
        raw = mutate(SEED, lambda r, v=version: r["models"][DEPLOY_MODEL].update(vllmVersion=".".join(map(str, v))))
        raw["models"][DEPLOY_MODEL]["engine"]["extraArgs"] = [flag]
        raw["models"][DEPLOY_MODEL]["engine"].pop("toolCallParser")
        raw["models"][DEPLOY_MODEL]["engine"].pop("ropeScaling")
        paths = [p.path for p in problems_of(raw)] if refused else [p.path for p in _errors_or_none(raw)]
        assert (f"models.{DEPLOY_MODEL}.engine.extraArgs[0]" in paths) is refused, (flag, version)


def _errors_or_none(raw: dict[str, Any]) -> list[Any]:
    try:
        load(raw)
    except Exception as error:
        return list(getattr(error, "problems", []))
    return []


def test_an_unreadable_vllm_version_is_a_warning_naming_vllm_version() -> None:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(image="10.8.17.100:60066/mars/vllm-mars:prod"))
    spec = load(raw)
    (warning,) = [w for w in spec.warnings if w.path == f"models.{DEPLOY_MODEL}.image"]
    assert "cannot be read from the image tag" in warning.message and "vllmVersion" in warning.fix
    assert not spec.models[DEPLOY_MODEL].vllm_version_known


def test_tool_call_parsers_must_exist_and_match_the_model_family() -> None:
    wrong = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(toolCallParser="granite"))
    (warning,) = [w for w in load(wrong).warnings if w.path.endswith("toolCallParser")]
    assert "Qwen2.5/Qwen3" in warning.message and "`hermes`" in warning.fix
    unknown = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL]["engine"].update(toolCallParser="qwen3_json"))
    (error,) = problems_of(unknown)  # registered only from vLLM 0.32 on; the model runs 0.11
    assert error.path == f"models.{DEPLOY_MODEL}.engine.toolCallParser" and "hermes" in error.fix


def test_workers_wait_for_the_ray_head_with_a_public_command(committed_render: Any) -> None:
    lws = committed_render("aicloud-a").rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest
    worker = _container(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"])["args"][0]
    assert 'ray status --address "$LWS_LEADER_ADDRESS:6379"' in worker and "health-check" not in worker


def test_a_multi_node_model_scaled_to_zero_holds_no_quota(render_raw: Any, tmp_path: Path) -> None:
    """No PodGroup while at zero (an Inqueue PodGroup without pods keeps its minResources counted);
    scaling back creates it before the LeaderWorkerSet's pods need it."""
    zero = mutate(SEED, lambda r: r["models"][LWS_MODEL].update(replicas=0))
    at_zero = render_raw(zero)
    assert at_zero.rendered.by_kind("PodGroup") == []
    assert at_zero.rendered.find("LeaderWorkerSet", LWS_MODEL, "a01").manifest["spec"]["replicas"] == 0
    write_render(at_zero, tmp_path / "zero")
    back = render_raw(SEED)
    write_render(back, tmp_path / "back")
    result, _ = diff_dirs(tmp_path / "zero", tmp_path / "back")
    assert result.added == [f"manifests/PodGroup.a01.{LWS_MODEL}.yaml"]
    lws = next(e for e in back.rendered.index if e["urn"].endswith(f"::model-{LWS_MODEL}-lws"))
    assert any(d.endswith(f"::model-{LWS_MODEL}-podgroup") for d in lws["dependsOn"])


# -- volumes ----------------------------------------------------------------------------------------


def _with_volumes(volumes: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    raw = mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(volumes=volumes))
    raw["cluster"].update(cluster)
    return raw


def test_extra_volumes_are_mounted(render_raw: Any) -> None:
    raw = _with_volumes(
        {
            "ascend-driver": {"hostPath": "/usr/local/Ascend/driver", "mountPath": "/usr/local/Ascend/driver"},
            "chat-templates": {"configMap": "templates", "mountPath": "/templates"},
            "cache": {"pvc": "vllm-cache", "mountPath": "/root/.cache", "readOnly": False},
        },
        accelerator={"vendor": "ascend"},
    )
    template = render_raw(raw).rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["ascend-driver"] == {"name": "ascend-driver", "hostPath": {"path": "/usr/local/Ascend/driver"}}
    assert volumes["chat-templates"]["configMap"] == {"name": "templates"}
    assert volumes["cache"]["persistentVolumeClaim"] == {"claimName": "vllm-cache", "readOnly": False}
    mounts = {m["name"]: m for m in _container(template)["volumeMounts"]}
    assert mounts["cache"] == {"name": "cache", "mountPath": "/root/.cache", "readOnly": False}
    assert mounts["ascend-driver"]["readOnly"] is True


@pytest.mark.parametrize(
    ("volume", "path"),
    [
        ({"hostPath": "/", "mountPath": "/host"}, "volumes.v.hostPath"),
        ({"hostPath": "/etc/kubernetes", "mountPath": "/k"}, "volumes.v.hostPath"),
        ({"hostPath": "/usr/local/Ascend/driver", "mountPath": "/d"}, "volumes.v.hostPath"),  # not an Ascend cluster
        ({"hostPath": "/data/../etc", "mountPath": "/d"}, "volumes.v"),
        ({"hostPath": "/data/x", "mountPath": "relative"}, "volumes.v"),
        ({"hostPath": "/data/x", "pvc": "p", "mountPath": "/d"}, "volumes.v"),
        ({"configMap": "c", "mountPath": "/dev/shm"}, "volumes.v.mountPath"),
        ({"configMap": "c", "mountPath": "/workspace/model"}, "volumes.v.mountPath"),
    ],
)
def test_dangerous_or_clashing_volumes_are_refused(volume: dict[str, Any], path: str) -> None:
    assert f"models.{DEPLOY_MODEL}.{path}" in paths_of(_with_volumes({"v": volume}))


def test_platform_volume_names_are_reserved() -> None:
    assert f"models.{DEPLOY_MODEL}.volumes.dshm" in paths_of(
        _with_volumes({"dshm": {"configMap": "c", "mountPath": "/c"}})
    )
