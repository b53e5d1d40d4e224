"""`PriorityClasses`: the classes that order workloads and decide who may preempt whom."""

from __future__ import annotations

import pulumi

from components.kubernetes.objects import adoptable, adopted, merged
from components.kubernetes.resource import PRIORITY_CLASS, KubernetesResource
from config.platform_labels import MANAGED_BY
from config.sections.priority import PriorityClassConfig


class PriorityClasses(pulumi.ComponentResource):
    """One `scheduling.k8s.io/v1` PriorityClass per configured class."""

    classes: dict[str, KubernetesResource]

    def __init__(
        self,
        name: str,
        classes: dict[str, PriorityClassConfig],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("volcano-platform:priority:PriorityClasses", name, None, opts)
        self.classes = {}
        for class_name, config in classes.items():
            self.classes[class_name] = KubernetesResource(
                f"{name}-{class_name}",
                PRIORITY_CLASS,
                adoptable(
                    config.adopt,
                    {
                        "metadata": {"name": class_name, "labels": dict(MANAGED_BY)},
                        "value": config.value,
                        "preemptionPolicy": config.preemption_policy,
                        "globalDefault": config.global_default,
                        "description": config.description or None,
                    },
                ),
                # `value` and `preemptionPolicy` are immutable; the name is a contract, so the
                # old class must go before the new one can take it.
                opts=merged(
                    pulumi.ResourceOptions(
                        parent=self,
                        replace_on_changes=["value", "preemptionPolicy"],
                        delete_before_replace=True,
                    ),
                    adopted(config.adopt, {"metadata": {"name": class_name}}),
                ),
            )
        self.register_outputs({"classes": list(self.classes)})
