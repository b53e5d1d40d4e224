"""Cloud interconnect devices: what a pod that requests one needs besides the device itself.

A model asks for its NICs as device resources (`resources.devices`); the device plugin hands the
pod the devices, but the collective library only uses them when its environment and the pod's
memory say so. Each entry names the document it is taken from; a model's own `env` wins.
"""

from __future__ import annotations

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
