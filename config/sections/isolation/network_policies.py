"""`networkPolicies`: the NetworkPolicies that keep tenants apart on the pod network.

Every tenant namespace gets a policy that admits traffic only from the tenant's own namespaces,
from the gateway's namespace to the ports its models serve on, from the monitoring namespace to
the ports Prometheus scrapes, and from what the tenant lists in `tenants.<t>.allowFrom`. A model's
routers take the gateway's ext-proc calls and Prometheus' scrapes only. Decode pods of a model
with prefill and decode apart may reach only their own slice's prefill pods, DNS and where their
weights come from: the prefill address a request names (`x-prefiller-host-port`) cannot send the
prompt anywhere else. The cluster's network plugin enforces them (Calico, Cilium, the cloud
plugins in their policy mode); on a plugin that does not, they are inert (docs/operations.md,
"Tenant isolation").
"""

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, Field

from config.schema.base import ConfigModel, invalid
from config.schema.names import DnsLabel

Port = Annotated[int, Field(ge=1, le=65535)]


def _cidr(text: str) -> str:
    try:
        network = ipaddress.ip_network(text, strict=True)
    except ValueError:
        raise invalid(
            f"`{text}` is not a CIDR block", "write a network such as `10.20.0.0/24` (host bits zero)"
        ) from None
    return str(network)


Cidr = Annotated[str, AfterValidator(_cidr)]
"""An IPv4 or IPv6 network, host bits zero (as NetworkPolicy's `ipBlock.cidr`)."""


class NetworkPoliciesConfig(ConfigModel):
    """NetworkPolicies in every tenant namespace (on by default)."""

    enabled: bool = True
    """Render them. Off: tenants reach each other's models, routers and metrics directly, and a
    model with prefill and decode apart behind the gateway is refused (its decode pods would post
    prompts wherever a request's prefill header points)."""
    dns_namespace: DnsLabel = "kube-system"
    """Namespace of the cluster's DNS, which decode pods may reach on port 53."""
    hub_egress_cidrs: tuple[Cidr, ...] = ("0.0.0.0/0",)
    """Where decode pods of a model whose weights come from the Hugging Face hub may connect (on
    `hubEgressPorts`). `0.0.0.0/0` (the default) leaves out the private, link-local and shared
    ranges (the cluster's own addresses and the cloud's metadata service): the public internet.
    Name the hub mirror's network to allow only it."""
    hub_egress_ports: tuple[Port, ...] = (443,)
    """Ports of `hubEgressCidrs`."""


class TenantAllowFrom(ConfigModel):
    """Who else may connect to a tenant's pods (every port), besides its own namespaces, the
    gateway and monitoring."""

    namespaces: tuple[DnsLabel, ...] = ()
    """Namespaces whose pods may connect (e.g. an application calling a model's Service)."""
    cidrs: tuple[Cidr, ...] = ()
    """Networks that may connect (e.g. a load balancer's subnet)."""
