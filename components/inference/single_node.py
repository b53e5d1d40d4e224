"""`SingleNodeModel`: a Deployment of vLLM servers and the Service in front of them."""

from __future__ import annotations

import pulumi

from components.inference.deployment import deployment_manifest
from components.inference.model_objects import (
    MULTI_NODE_TYPE,
    SINGLE_NODE_TYPE,
    ModelDependencies,
    autoscaled_options,
    awaited,
    kind_change_alias,
    register_autoscaler,
    register_service,
)
from components.kubernetes.objects import adoptable, adopted, merged
from components.kubernetes.resource import DEPLOYMENT, KubernetesResource
from config.spec.model import ModelSpec


class SingleNodeModel(pulumi.ComponentResource):
    """A Deployment of vLLM servers and the ClusterIP Service in front of them. Volcano makes one
    PodGroup per ReplicaSet (minMember 1) from the pods' queue annotation."""

    def __init__(
        self, name: str, model: ModelSpec, deps: ModelDependencies, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__(SINGLE_NODE_TYPE, name, None, kind_change_alias(opts, MULTI_NODE_TYPE))
        child = pulumi.ResourceOptions(parent=self, depends_on=deps.resources())
        manifest = adoptable("workload" in model.config.adopt, deployment_manifest(model))
        deployment = KubernetesResource(
            f"{name}-deployment",
            DEPLOYMENT,
            manifest,
            # The name is fixed: a replacement (e.g. a new selector) must free it first. Loading
            # weights outlasts the provider's 10-minute wait, so the wait follows the load budget.
            merged(
                child,
                pulumi.ResourceOptions(delete_before_replace=True),
                awaited(model),
                adopted("workload" in model.config.adopt, manifest),
                autoscaled_options(model),
            ),
        )
        register_autoscaler(name, model, deps, pulumi.ResourceOptions(parent=self, depends_on=[deployment]))
        self.register_outputs({"service": register_service(name, model, child)})
