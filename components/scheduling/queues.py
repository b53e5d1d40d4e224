"""`TenantQueues`: each tenant's namespaces and Volcano Queue, and the `default` queue patch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components.kubernetes.objects import adoptable, adopted, custom_resource, merged
from components.kubernetes.resource import NAMESPACE, KubernetesResource, custom_kind
from config.platform_labels import MANAGED_BY, TENANT_LABEL
from config.sections.tenants import DefaultQueuePatch
from config.spec.platform import PlatformSpec, TenantSpec
from config.spec.tenancy.grants import device_ceilings, grant_of
from config.upstream.kubernetes import PATCH_FORCE_ANNOTATION, PSA_LABEL_PREFIX, PSA_MODES, WAIT_FOR_ANNOTATION
from config.upstream.volcano import FLOOR_DEQUEUE_STRATEGY, QUEUE_API_VERSION

# `pulumi up` waits until the controller has opened the queue; PodGroups in a queue that is not
# yet Open are rejected by admission.
QUEUE_OPEN = "jsonpath={.status.state}=Open"


def queue_manifest(
    tenant: TenantSpec,
    volcano_version: tuple[int, ...] = FLOOR_DEQUEUE_STRATEGY,
    devices: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The tenant's Queue, with only the fields the installed Volcano's Queue CRD has: a 1.13 API
    server prunes or refuses `dequeueStrategy` (the stack refuses setting it there). `devices`:
    the capability of each device its tenant file's models request, at the tenant's ceiling
    (`config.spec.tenancy.grants.device_ceilings`), so Volcano counts them as it counts the accelerator."""
    queue = tenant.config.queue
    spec: dict[str, Any] = {"weight": queue.weight, "reclaimable": queue.reclaimable, "priority": queue.priority}
    if volcano_version >= FLOOR_DEQUEUE_STRATEGY:
        spec["dequeueStrategy"] = queue.dequeue_strategy
    capability = {**(devices or {}), **queue.capability}
    if capability:
        spec["capability"] = capability
    if queue.deserved:
        spec["deserved"] = dict(queue.deserved)
    if queue.guarantee:
        spec["guarantee"] = {"resource": dict(queue.guarantee)}
    if tenant.parent_queue:
        spec["parent"] = tenant.parent_queue
    if tenant.node_groups is not None:
        spec["affinity"] = {
            "nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(tenant.node_groups)}
        }
    return {
        "apiVersion": QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {
            "name": tenant.queue_name,
            "labels": {TENANT_LABEL: tenant.parent if tenant.accelerator_type else tenant.name, **MANAGED_BY},
            # Forced: Volcano's queue controller sets `spec.parent: root` on a queue created
            # without one (`updateQueueParent`, pkg/controllers/queue/queue_controller_action.go,
            # v1.15.1) and so co-owns it; without force, moving a tenant under a parent later is a
            # field conflict at `pulumi up`.
            "annotations": {WAIT_FOR_ANNOTATION: QUEUE_OPEN, PATCH_FORCE_ANNOTATION: "true"},
        },
        "spec": spec,
    }


def namespace_labels(spec: PlatformSpec, tenant: TenantSpec) -> dict[str, str]:
    """The tenant's own labels, its name, and the Pod Security level of its grant in every mode:
    the API server refuses (`enforce`), records (`audit`) and warns of (`warn`) pods beyond it."""
    level = grant_of(spec, tenant.name).pod_security
    security = {f"{PSA_LABEL_PREFIX}{mode}": level for mode in PSA_MODES}
    return {**tenant.config.labels, **security, TENANT_LABEL: tenant.name, **MANAGED_BY}


def default_queue_patch(patch: DefaultQueuePatch) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if patch.weight is not None:
        spec["weight"] = patch.weight
    if patch.capability is not None:
        spec["capability"] = dict(patch.capability)
    if patch.reclaimable is not None:
        spec["reclaimable"] = patch.reclaimable
    return spec


class TenantQueues(pulumi.ComponentResource):
    """Namespaces labelled with their tenant, one Queue per tenant (parents first)."""

    namespaces: dict[str, KubernetesResource]
    """Namespace name -> resource."""
    queues: dict[str, KubernetesResource]
    """Tenant name -> its Queue."""

    def __init__(
        self,
        name: str,
        spec: PlatformSpec,
        volcano: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:queues:TenantQueues", name, None, opts)
        self.namespaces = {}
        self.queues = {}
        for tenant in spec.tenants.values():
            for namespace in tenant.namespaces:
                self.namespaces[namespace] = KubernetesResource(
                    f"{name}-namespace-{namespace}",
                    NAMESPACE,
                    adoptable(
                        "namespaces" in tenant.config.adopt,
                        {
                            "metadata": {
                                "name": namespace,
                                "labels": namespace_labels(spec, tenant),
                            }
                        },
                    ),
                    # Kept by default: a namespace holds things the stack does not manage.
                    merged(
                        pulumi.ResourceOptions(parent=self, retain_on_delete=tenant.config.retain_namespaces),
                        adopted("namespaces" in tenant.config.adopt, {"metadata": {"name": namespace}}),
                    ),
                )
            manifest = adoptable(
                "queue" in tenant.config.adopt,
                queue_manifest(tenant, spec.config.volcano.version_tuple, device_ceilings(spec, tenant.name)),
            )
            depends: list[pulumi.Resource] = [volcano]
            if tenant.parent:
                depends.append(self.queues[tenant.parent])
            self.queues[tenant.name] = custom_resource(
                f"{name}-queue-{tenant.name}",
                manifest,
                merged(
                    pulumi.ResourceOptions(parent=self, depends_on=depends, delete_before_replace=True),
                    adopted("queue" in tenant.config.adopt, manifest),
                ),
            )
        if spec.config.default_queue is not None:
            # The scheduler created `default` and owns its `weight` and `reclaimable` under
            # server-side apply; without force, changing them is a conflict at `pulumi up` that no
            # preview shows.
            KubernetesResource(
                f"{name}-default-queue",
                custom_kind(QUEUE_API_VERSION, "Queue", patch=True),
                {
                    "metadata": {"name": "default", "annotations": {PATCH_FORCE_ANNOTATION: "true"}},
                    "spec": default_queue_patch(spec.config.default_queue),
                },
                pulumi.ResourceOptions(parent=self, depends_on=[volcano]),
            )
        self.register_outputs({"queues": spec.queue_names})
