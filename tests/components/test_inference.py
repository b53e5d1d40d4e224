"""Per-model inference stacks: the seed's two models, pod templates, PodGroups, LWS, Services."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from offline.render import write_render
from offline.review import diff_dirs
from offline.schemas import validate_objects
from tests.components.helpers import DEPLOY_MODEL, GPU, LWS_MODEL, SEED, container_of, vllm_argv, with_volumes
from tests.conftest import mutate


def test_seed_single_node_model_is_a_deployment(committed_render: Any) -> None:
    result = committed_render("aicloud-a")
    deployment = result.rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest
    template = deployment["spec"]["template"]
    assert template["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "tenanta"
    assert template["metadata"]["labels"]["app"] == "qwen8b"
    spec = template["spec"]
    assert spec["schedulerName"] == "volcano" and spec["priorityClassName"] == "p0-critical"
    assert spec["enableServiceLinks"] is False
    container = container_of(template)
    assert (
        container["resources"]["requests"]
        == container["resources"]["limits"]
        == {"cpu": "12", "memory": "48Gi", GPU: "1"}
    )
    argv = vllm_argv(container)
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
        container = container_of(pod)
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
    leader = container_of(template["leaderTemplate"])
    argv = vllm_argv(leader)
    assert argv[:3] == ["vllm", "serve", "/workspace/model/Qwen2-72B"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--pipeline-parallel-size") + 1] == "2"
    assert argv[argv.index("--distributed-executor-backend") + 1] == "ray"
    assert argv[argv.index("--dtype") + 1] == "bfloat16" and argv[argv.index("--max-model-len") + 1] == "4096"
    assert "--swap-space" not in argv
    assert leader["startupProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert leader["startupProbe"]["failureThreshold"] * leader["startupProbe"]["periodSeconds"] >= 1800
    worker = container_of(template["workerTemplate"])
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


def test_changing_replicas_changes_only_that_model(tmp_path: Path, render_raw: Any) -> None:
    write_render(render_raw(SEED), tmp_path / "old")
    write_render(render_raw(mutate(SEED, lambda r: r["models"][DEPLOY_MODEL].update(replicas=3))), tmp_path / "new")
    result, _ = diff_dirs(tmp_path / "old", tmp_path / "new")
    assert result.changed == [f"manifests/Deployment.a01.{DEPLOY_MODEL}.yaml"]
    assert not (result.added or result.removed or result.replaced)


def test_secrets_become_kubernetes_secrets_referenced_by_name(render_raw: Any) -> None:
    # What `pulumi config set --secret` writes under a passphrase.
    encrypted = {"secure": "v1:jkDab+RjkhW3UlXB:B/E0OVE3jqn2wXpE/g5T6Np3EfM1eClb4JEV7ycsA25h54wUMkL/07s="}
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
    container = container_of(deployment["spec"]["template"])
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


def test_extra_volumes_are_mounted(render_raw: Any) -> None:
    raw = with_volumes(
        {
            "ascend-driver": {"hostPath": "/usr/local/Ascend/driver", "mountPath": "/usr/local/Ascend/driver"},
            "chat-templates": {"configMap": "templates", "mountPath": "/templates"},
            "cache": {"pvc": "vllm-cache", "mountPath": "/root/.cache", "readOnly": False},
        },
        gpuResource="huawei.com/Ascend910",
    )
    # Ascend NPUs throughout (quotas and requests), running vLLM-Ascend: a MetaX build is refused there.
    raw = json.loads(json.dumps(raw).replace("mars-tech.com/gpu", "huawei.com/Ascend910"))
    raw["modelDefaults"]["image"] = "10.8.17.100:60066/ascend/vllm-ascend:v0.11.0rc1"
    template = render_raw(raw).rendered.find("Deployment", DEPLOY_MODEL, "a01").manifest["spec"]["template"]
    volumes = {v["name"]: v for v in template["spec"]["volumes"]}
    assert volumes["ascend-driver"] == {"name": "ascend-driver", "hostPath": {"path": "/usr/local/Ascend/driver"}}
    assert volumes["chat-templates"]["configMap"] == {"name": "templates"}
    assert volumes["cache"]["persistentVolumeClaim"] == {"claimName": "vllm-cache", "readOnly": False}
    mounts = {m["name"]: m for m in container_of(template)["volumeMounts"]}
    assert mounts["cache"] == {"name": "cache", "mountPath": "/root/.cache", "readOnly": False}
    assert mounts["ascend-driver"]["readOnly"] is True
