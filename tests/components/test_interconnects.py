"""Cloud interconnects: a pod that requests EFA devices gets what AWS documents it needs besides the
devices (the libfabric provider, GPUDirect RDMA, 2 MiB huge pages), and a model's own settings win;
a pool's network profile (EFA, GPUDirect-TCPXO) adds what its interconnect needs to the pods of
every model spanning its nodes."""

from __future__ import annotations

import json

from components.inference.pod_template import pod_template
from tests.conftest import load, mutate, problems_of, stack_raw

EFA = "vpc.amazonaws.com/efa"


def _pod(change: dict[str, object] | None = None) -> dict[str, object]:
    raw = stack_raw("aicloud-eks")
    raw["models"]["llama-405b"].update(change or {})
    spec = load(raw, "aicloud-eks")
    return pod_template(spec.models["llama-405b"], "leader")["spec"]  # type: ignore[return-value]


def test_an_efa_pod_gets_the_provider_rdma_and_huge_pages() -> None:
    container = _pod()["containers"][0]  # type: ignore[index]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert container["resources"]["requests"]["hugepages-2Mi"] == "5120Mi"
    assert container["resources"]["limits"] == container["resources"]["requests"]
    assert container["resources"]["requests"][EFA] == "32"


def test_the_models_own_environment_wins() -> None:
    container = _pod({"env": {"FI_EFA_USE_DEVICE_RDMA": "0"}})["containers"][0]  # type: ignore[index]
    values = [e.get("value") for e in container["env"] if e["name"] == "FI_EFA_USE_DEVICE_RDMA"]
    assert values == ["0"]


def test_a_pod_without_efa_gets_none_of_it() -> None:
    raw = stack_raw("aicloud-eks")
    spec = load(raw, "aicloud-eks")
    container = pod_template(spec.models["qwen3-32b"], "server")["spec"]["containers"][0]
    assert not any(e["name"].startswith("FI_") for e in container.get("env", []))
    assert "hugepages-2Mi" not in container["resources"]["requests"]


INTERFACES = [f"vpc{i}" for i in range(1, 9)]


def _on_profile(network: dict[str, object], **tenant_grant: object) -> dict[str, object]:
    """The EKS example with its H100 pools carrying a network profile and its two multi-node models
    (tenants `pretrain` and `alignment`) asking for no devices of their own."""
    raw = stack_raw("aicloud-eks")
    for pool in ("h100-a", "h100-b"):
        raw["pools"][pool]["network"] = network
    for model, tenant in (("llama-405b", "pretrain"), ("deepseek-v3", "alignment")):
        raw["models"][model]["resources"].pop("devices")
        raw["tenantPolicy"]["tenants"][tenant].update(tenant_grant)
    return raw


def test_an_efa_pool_gives_its_multi_node_models_the_devices_and_what_they_need() -> None:
    """`network: {profile: efa, devices: 32}` makes every pod of a model spanning the pool's nodes
    request 32 EFA interfaces, with their huge pages and variables, counted in its queue's quota;
    a single-node model on the pool requests none."""
    raw = _on_profile({"profile": "efa", "devices": 32})
    raw["models"]["qwen3-32b"]["pools"] = ["h100-a"]
    spec = load(raw, "aicloud-eks")
    leader = pod_template(spec.models["llama-405b"], "leader")["spec"]["containers"][0]
    assert leader["resources"]["requests"][EFA] == "32"
    assert leader["resources"]["requests"]["hugepages-2Mi"] == "5120Mi"
    assert {e["name"]: e.get("value") for e in leader["env"]}["FI_PROVIDER"] == "efa"
    assert spec.models["llama-405b"].gang.pod_requests[EFA] == "32", "the gang and the queue count them"
    single = pod_template(spec.models["qwen3-32b"], "server")["spec"]["containers"][0]
    assert EFA not in single["resources"]["requests"]


def test_a_tcpxo_pool_gives_its_multi_node_models_the_daemon_networks_and_plugin() -> None:
    """GPUDirect-TCPXO as Google's unprivileged sample runs it: the receive-data-path daemon as a
    native sidecar with NET_ADMIN and the node's /sys and /proc/sys, the GPUs injected into it by
    annotation, eight GPU NICs on the pool's networks, the NCCL plugin from the node with its
    variables in the server; leaders and workers alike."""
    raw = _on_profile({"profile": "gpudirect-tcpxo", "interfaces": INTERFACES}, podSecurity="privileged")
    spec = load(raw, "aicloud-eks")
    for role in ("leader", "worker"):
        template = pod_template(spec.models["llama-405b"], role)
        pod, annotations = template["spec"], template["metadata"]["annotations"]
        (daemon,) = pod["initContainers"]
        assert daemon["name"] == "tcpxo-daemon" and daemon["restartPolicy"] == "Always"
        assert daemon["securityContext"] == {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}}
        assert {m["mountPath"] for m in daemon["volumeMounts"]} == {
            "/usr/local/nvidia/lib64",
            "/hostsysfs",
            "/hostprocsysfs",
        }
        assert annotations["devices.gke.io/container.tcpxo-daemon"].splitlines()[:2] == [
            "- path: /dev/nvidia0",
            "- path: /dev/nvidia1",
        ]
        assert "- path: /dev/nvidia7" in annotations["devices.gke.io/container.tcpxo-daemon"]
        nics = json.loads(annotations["networking.gke.io/interfaces"])
        assert nics[0] == {"interfaceName": "eth0", "network": "default"}
        assert nics[8] == {"interfaceName": "eth8", "network": "vpc8"} and len(nics) == 9
        hosts = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
        assert hosts == {
            "nvidia": "/home/kubernetes/bin/nvidia/lib64",
            "sys": "/sys",
            "proc-sys": "/proc/sys",
            "aperture-devices": "/dev/aperture_devices",
        }
        server = pod["containers"][0]
        env = {e["name"]: e.get("value") for e in server["env"]}
        assert env["NCCL_FASTRAK_IFNAME"] == "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"
        assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
        assert {"/usr/local/nvidia/lib64", "/dev/aperture_devices"} <= {m["mountPath"] for m in server["volumeMounts"]}
        assert not any(e["name"].startswith("FI_") for e in server["env"]), "no EFA variables"


def test_a_tcpxo_pool_is_held_to_its_hardware_a_whole_node_and_the_privileged_level() -> None:
    baseline = _on_profile({"profile": "gpudirect-tcpxo", "interfaces": INTERFACES})
    problems = {p.path: p for p in problems_of(baseline)}
    pools = problems["models.llama-405b.pools"]
    assert "host path /sys" in pools.message and "capability NET_ADMIN" in pools.message
    assert "podSecurity" in pools.fix
    half = mutate(baseline, lambda r: r["models"]["llama-405b"]["resources"].update(gpus=4))
    half["models"]["llama-405b"]["engine"]["tensorParallelSize"] = 4
    assert "models.llama-405b.resources.gpus" in {p.path for p in problems_of(half)}
    privileged = _on_profile({"profile": "gpudirect-tcpxo", "interfaces": INTERFACES}, podSecurity="privileged")
    warnings = {p.path: p for p in load(privileged, "aicloud-eks").warnings}
    assert "A3 Mega" in warnings["pools.h100-a.network.profile"].message, "an EKS H100 is no A3 Mega"
    seven = _on_profile({"profile": "gpudirect-tcpxo", "interfaces": INTERFACES[:7]}, podSecurity="privileged")
    assert "pools.h100-a.network" in {p.path for p in problems_of(seven)}


def test_a_model_spanning_pools_of_different_profiles_is_refused() -> None:
    raw = _on_profile({"profile": "efa", "devices": 32})
    del raw["pools"]["h100-b"]["network"]
    problem = next(p for p in problems_of(raw) if p.path == "models.deepseek-v3.pools")
    assert "`h100-a` (efa), `h100-b` (none)" in problem.message


def test_the_tcpxo_daemon_comes_from_the_mirror_or_the_pools_own_image() -> None:
    raw = _on_profile({"profile": "gpudirect-tcpxo", "interfaces": INTERFACES}, podSecurity="privileged")
    raw["cluster"]["mirror"] = {"registry": "registry.example.com"}
    (daemon,) = pod_template(load(raw, "aicloud-eks").models["llama-405b"], "leader")["spec"]["initContainers"]
    assert daemon["image"] == "registry.example.com/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21"
    for pool in ("h100-a", "h100-b"):
        raw["pools"][pool]["network"]["daemonImage"] = "registry.example.com/rxdm:v1.0.20"
    (daemon,) = pod_template(load(raw, "aicloud-eks").models["llama-405b"], "leader")["spec"]["initContainers"]
    assert daemon["image"] == "registry.example.com/rxdm:v1.0.20", "matched to the plugin the nodes have"
