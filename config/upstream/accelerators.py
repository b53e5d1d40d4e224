"""Accelerator vendors: what a cluster's device resource means to Ray, vLLM and the people reading
the summaries.

The multi-node Ray bootstrap must advertise each pod's devices the way the vendor's vLLM build
looks for them: NVIDIA, AMD and CUDA-compatible vendor GPUs are Ray `GPU`s (`--num-gpus`), Ascend
NPUs are a custom Ray resource `NPU` (vLLM-Ascend places its workers on it). The vendor follows
from the resource name's domain unless the stack says otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Vendor:
    name: str
    """Key in `cluster.accelerator.vendor`."""
    resource_domains: tuple[str, ...]
    """Domains of the Kubernetes extended resource names its device plugin advertises."""
    ray_resource: str
    """`GPU` (`ray start --num-gpus`) or the custom resource vLLM's platform plugin schedules on."""
    device_env: str
    """The variable that pins visible devices (setting it to fewer devices than requested hides
    the rest)."""
    word: str
    """What the devices are called in summaries and the topology picture."""
    host_paths: tuple[str, ...] = ()
    """Driver and tool paths its containers commonly mount from the node (allowed by default)."""


VENDORS: dict[str, Vendor] = {
    vendor.name: vendor
    for vendor in (
        Vendor("nvidia", ("nvidia.com",), "GPU", "CUDA_VISIBLE_DEVICES", "GPU"),
        Vendor("amd", ("amd.com",), "GPU", "HIP_VISIBLE_DEVICES", "GPU"),
        Vendor(
            "ascend",
            ("huawei.com",),
            "NPU",
            "ASCEND_RT_VISIBLE_DEVICES",
            "NPU",
            ("/usr/local/Ascend/driver", "/usr/local/dcmi", "/usr/local/bin/npu-smi", "/etc/ascend_install.info"),
        ),
        # MetaX-style vendor GPUs run a CUDA-compatible stack (MACA) and count as Ray GPUs; the
        # example cluster's `mars-tech.com/gpu` is one.
        Vendor("metax", ("metax-tech.com", "mars-tech.com"), "GPU", "CUDA_VISIBLE_DEVICES", "GPU"),
        Vendor("other", (), "GPU", "CUDA_VISIBLE_DEVICES", "accelerator"),
    )
}


def vendor_of(resource: str) -> Vendor:
    """The vendor whose device plugin advertises `resource`; `other` when none is known."""
    domain = resource.split("/", 1)[0] if "/" in resource else ""
    for vendor in VENDORS.values():
        if domain in vendor.resource_domains:
            return vendor
    return VENDORS["other"]


def plural(word: str) -> str:
    return word + "s"


# AMD GPUs (ROCm). The device plugin (ROCm/k8s-device-plugin `internal/pkg/plugin/plugin.go`,
# `Allocate`) isolates a pod by the device nodes it mounts, `/dev/kfd` and one `/dev/dri/card<N>` and
# `renderD<N>` per GPU, and sets no environment: inside the pod the GPUs are 0..n-1.
AMD_DEVICE_ENV_RAY_REFUSES: Final = "ROCR_VISIBLE_DEVICES"
"""Ray's AMD accelerator manager (`python/ray/_private/accelerators/amd_gpu.py`, since Ray PR
#51104) raises at start when this is set; vLLM needs Ray >= 2.48."""
AMD_DEVICE_ENV_MUST_MATCH: Final = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
"""vLLM's ROCm platform refuses to start when both are set and differ (`platforms/rocm.py`: an
assert in 0.11, `_sync_hip_cuda_env_vars` raising ValueError in 0.33)."""
AMD_RAY_NOSET_ENV: Final = "RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES"
"""Keeps Ray from pinning each worker actor to one GPU with `HIP_VISIBLE_DEVICES` while vLLM's Ray
executor (before 0.16) pins it with `CUDA_VISIBLE_DEVICES` to all of the node's: vLLM's own ROCm
Dockerfile sets it in 0.11 (with the `..._ROCR_...` variable, which Ray >= 2.45 no longer reads),
and from 0.16 vLLM sets it in every worker's runtime env itself (vLLM PR #33308)."""


PRODUCT_LABELS: Final[tuple[str, ...]] = (
    # GPU feature discovery (NVIDIA k8s-device-plugin, docs/gpu-feature-discovery/README.md), e.g.
    # `NVIDIA-H100-80GB-HBM3`; installed with NVIDIA's GPU operator, and by EKS's accelerated AMIs
    # with the device plugin's chart.
    "nvidia.com/gpu.product",
    # GKE sets it on every node of a GPU node pool from the pool's accelerator type, e.g.
    # `nvidia-h100-mega-80gb`, `nvidia-l4` (cloud.google.com/kubernetes-engine/docs/how-to/gpus);
    # GKE runs no feature discovery of its own.
    "cloud.google.com/gke-accelerator",
)
"""Node labels that name a node's accelerator product, in the order they are read."""
GKE_A3_MEGA_ACCELERATOR: Final = "nvidia-h100-mega-80gb"
"""GKE's accelerator type of A3 Mega (`a3-megagpu-8g`), the machine GPUDirect-TCPXO runs on."""


def product_of(labels: dict[str, str]) -> tuple[str, str] | None:
    """(label, product) of the first of `PRODUCT_LABELS` the node carries."""
    return next(((key, labels[key]) for key in PRODUCT_LABELS if labels.get(key)), None)


def type_of(product: str) -> str | None:
    """The short type a product is commonly called by (`h100`, `l40s`, `a100`), which quotas per
    type name: the product's first word after the vendor's and a `tesla-` prefix, lower case.
    None when that word is no DNS label."""
    words = product.lower().removeprefix("nvidia-").removeprefix("tesla-").split("-")
    word = words[0] if words else ""
    return word if word and len(word) <= 63 and word.isascii() and word.isalnum() else None
