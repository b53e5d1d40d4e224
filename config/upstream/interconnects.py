"""Cloud interconnects: what a pod needs besides its accelerators for traffic between nodes.

A model asks for its NICs as device resources (`resources.devices`), or its pool names a network
profile (`pools.<p>.network`) that adds them to every model spanning the pool's nodes; the device
plugin hands the pod the devices, but the collective library only uses them when its environment,
the pod's memory, a daemon beside it or node directories say so. Each entry names the document it
is taken from; a model's own `env` wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True)
class Interconnect:
    resource: str
    """The extended resource its device plugin advertises."""
    name: str
    env: dict[str, str] = field(default_factory=dict)
    """Set in every container of a pod that requests the device, unless the model sets the name."""
    requests: dict[str, str] = field(default_factory=dict)
    """Further resources per pod (requests = limits), unless the model requests them itself."""
    source: str = ""


EFA: Final = Interconnect(
    # aws-efa-k8s-device-plugin advertises the EFA interfaces of a node as `vpc.amazonaws.com/efa`.
    # AWS's EKS guide requests `hugepages-2Mi` for EFA pods (EFA instances pre-allocate 2 MiB pages;
    # its p5.48xlarge worker requests 5120Mi). aws-ofi-nccl's `doc/efa-env-var.md`: `FI_PROVIDER=efa`
    # picks the EFA libfabric provider (needed up to aws-ofi-nccl 1.5.0, harmless later) and
    # `FI_EFA_USE_DEVICE_RDMA=1` turns on GPUDirect RDMA (the default from libfabric 1.18 with
    # aws-ofi-nccl 1.7; harmless on p4d and p5).
    resource="vpc.amazonaws.com/efa",
    name="EFA",
    env={"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
    requests={"hugepages-2Mi": "5120Mi"},
    source="https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html; "
    "https://github.com/aws/aws-ofi-nccl/blob/master/doc/efa-env-var.md",
)

INTERCONNECTS: Final[dict[str, Interconnect]] = {EFA.resource: EFA}


@dataclass(frozen=True)
class HostMount:
    """A node directory a profile mounts into a container."""

    volume: str
    host_path: str
    mount_path: str


@dataclass(frozen=True)
class NetworkProfile:
    """What a pool's interconnect needs in the pods of a model whose replicas span its nodes
    (`pools.<p>.network.profile`): devices to request, a daemon beside the server, node
    directories, variables and pod annotations. Single-node models on the pool get none of it:
    their traffic stays on the node."""

    name: str
    title: str
    source: str
    device: Interconnect | None = None
    """The device a pod requests (`pools.<p>.network.devices` of them), with its variables."""
    interfaces: int = 0
    """Secondary NICs the pool's network names (`pools.<p>.network.interfaces`), in order."""
    whole_node: bool = False
    """Each pod must hold every accelerator of its node."""
    daemon: str | None = None
    """Container name of the daemon beside the server (a native sidecar: it runs before the server
    starts and as long as it runs)."""
    daemon_image: str = ""
    daemon_image_path: str = ""
    """The image's path under a registry mirror (`cluster.mirror.registry`)."""
    daemon_command: tuple[str, ...] = ()
    daemon_capabilities: tuple[str, ...] = ()
    daemon_mounts: tuple[HostMount, ...] = ()
    daemon_env: dict[str, str] = field(default_factory=dict)
    daemon_requests: dict[str, str] = field(default_factory=dict)
    """The daemon's requests (= limits), which its pod's gang and queue count."""
    mounts: tuple[HostMount, ...] = ()
    """Node directories mounted into the server (and worker) containers."""
    env: dict[str, str] = field(default_factory=dict)
    """Set in the server (and worker) containers unless the model sets the name."""

    @property
    def host_mounts(self) -> tuple[HostMount, ...]:
        return tuple({m.volume: m for m in (*self.daemon_mounts, *self.mounts)}.values())


# GKE's A3 Mega (a3-megagpu-8g): eight GPU NICs used by the NCCL FastRak plugin, which the
# `nccl-tcpxo-installer` DaemonSet puts on the node at /home/kubernetes/bin/nvidia/lib64 (the
# platform team applies it once per cluster), with the receive-data-path manager (RxDM) beside the
# workload. From Google's "Maximize GPU network bandwidth in Standard mode clusters" and the
# release notes and unprivileged sample of GoogleCloudPlatform/container-engine-accelerators
# (`gpudirect-tcpxo/README.md`, Jan 9 2026 release: RxDM v1.0.21, plugin v1.0.15, NCCL 2.28;
# `gpudirect-tcpxo/nccl-test-unprivileged-without-hostnetwork.yaml`): RxDM needs NET_ADMIN and
# NET_BIND_SERVICE, the node's /sys and /proc/sys and the GPUs, injected by GKE's device injector
# from the `devices.gke.io/container.<name>` annotation; the workload reads the plugin from the
# node, LLCM devices from /dev/aperture_devices, and the FastRak variables of the release notes
# (tuner and guest-config files under the plugin directory). A workload must use every GPU and
# every GPU NIC of its node. Host paths and NET_ADMIN are beyond the `baseline` Pod Security level.
TCPXO_LIBRARY = "/usr/local/nvidia/lib64"
TCPXO_INSTALLER_LABEL: Final = ("k8s-app", "nccl-tcpxo-installer")
"""The label of the installer DaemonSet's pods (`gpudirect-tcpxo/nccl-tcpxo-installer.yaml`)."""
TCPXO: Final = NetworkProfile(
    name="gpudirect-tcpxo",
    title="GPUDirect-TCPXO",
    source="https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx; "
    "https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/gpudirect-tcpxo/README.md",
    interfaces=8,
    whole_node=True,
    daemon="tcpxo-daemon",
    daemon_image="us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
    daemon_image_path="gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21",
    daemon_command=(
        "/bin/sh",
        "-c",
        "chmod 755 /fts/entrypoint_rxdm_container.sh && exec /fts/entrypoint_rxdm_container.sh --num_hops=2 "
        "--num_nics=8",
    ),
    daemon_capabilities=("NET_ADMIN", "NET_BIND_SERVICE"),
    daemon_mounts=(
        HostMount("nvidia", "/home/kubernetes/bin/nvidia/lib64", TCPXO_LIBRARY),
        HostMount("sys", "/sys", "/hostsysfs"),
        HostMount("proc-sys", "/proc/sys", "/hostprocsysfs"),
    ),
    daemon_env={"LD_LIBRARY_PATH": TCPXO_LIBRARY},
    # Google's samples request nothing for it; a pod of a gang states every container's share.
    daemon_requests={"cpu": "1", "memory": "1Gi"},
    mounts=(
        HostMount("nvidia", "/home/kubernetes/bin/nvidia/lib64", TCPXO_LIBRARY),
        HostMount("aperture-devices", "/dev/aperture_devices", "/dev/aperture_devices"),
    ),
    env={
        "LD_LIBRARY_PATH": TCPXO_LIBRARY,
        "NCCL_LIB_DIR": TCPXO_LIBRARY,
        "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": "/dev/aperture_devices",
        "NCCL_FASTRAK_CTRL_DEV": "eth0",
        "NCCL_FASTRAK_IFNAME": "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_CROSS_NIC": "0",
        "NCCL_PROTO": "Simple,LL128",
        "NCCL_MIN_NCHANNELS": "4",
        "NCCL_TUNER_PLUGIN": "libnccl-tuner.so",
        "NCCL_TUNER_CONFIG_PATH": f"{TCPXO_LIBRARY}/a3plus_tuner_config.textproto",
        "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": f"{TCPXO_LIBRARY}/a3plus_guest_config.textproto",
        "NCCL_NVLSTREE_MAX_CHUNKSIZE": "131072",
        "NCCL_P2P_NET_CHUNKSIZE": "524288",
        "NCCL_P2P_PCI_CHUNKSIZE": "524288",
        "NCCL_P2P_NVL_CHUNKSIZE": "1048576",
        "NCCL_FASTRAK_NUM_FLOWS": "2",
        "NCCL_FASTRAK_USE_SNAP": "1",
        "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS": "600000",
        "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL": "0",
        "NCCL_BUFFSIZE": "8388608",
        "NCCL_NET_GDR_LEVEL": "PIX",
        "NCCL_FASTRAK_ENABLE_HOTPATH_LOGGING": "0",
        "NCCL_FASTRAK_USE_LLCM": "1",
        "NCCL_NVLS_ENABLE": "1",
        # vLLM's own collectives load this NCCL (the plugin's core) instead of the wheel's
        # (`VLLM_NCCL_SO_PATH`, vllm/envs.py).
        "VLLM_NCCL_SO_PATH": f"{TCPXO_LIBRARY}/libnccl.so.2",
    },
)

EFA_PROFILE: Final = NetworkProfile(
    name="efa",
    title="EFA",
    source=EFA.source,
    device=EFA,
)

NETWORK_PROFILES: Final[dict[str, NetworkProfile]] = {p.name: p for p in (TCPXO, EFA_PROFILE)}

GKE_DEVICES_ANNOTATION_PREFIX: Final = "devices.gke.io/container."
GKE_INTERFACES_ANNOTATION: Final = "networking.gke.io/interfaces"
GKE_DEFAULT_INTERFACE_ANNOTATION: Final = "networking.gke.io/default-interface"
GKE_RESERVED_PREFIXES: Final = ("devices.gke.io/", "networking.gke.io/")
"""Annotations GKE acts on: the device injector puts the node's devices named in
`devices.gke.io/container.<name>` into that container (past the device plugin and its quota);
multi-networking attaches the pod to the `Network`s named in `networking.gke.io/interfaces`."""


def profile_annotations(profile: NetworkProfile, interfaces: tuple[str, ...], gpus: int) -> dict[str, str]:
    """The pod annotations of a profile: the daemon's devices (the pod's GPUs and the control
    devices the sample lists) and the NICs, `eth0` on the pod network and `eth<i>` on the pool's
    i-th GPU network."""
    if profile.daemon is None or not profile.interfaces:
        return {}
    devices = [f"/dev/nvidia{i}" for i in range(gpus)] + [
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/dmabuf_import_helper",
    ]
    nics = [{"interfaceName": "eth0", "network": "default"}] + [
        {"interfaceName": f"eth{i}", "network": network} for i, network in enumerate(interfaces, start=1)
    ]
    return {
        f"{GKE_DEVICES_ANNOTATION_PREFIX}{profile.daemon}": "".join(f"- path: {d}\n" for d in devices),
        GKE_DEFAULT_INTERFACE_ANNOTATION: "eth0",
        GKE_INTERFACES_ANNOTATION: json.dumps(nics, separators=(",", ":")),
    }
