"""`VolcanoInstall`: the Volcano scheduler, controller and admission webhook; `VolcanoPolicy`:
only the scheduler policy, where Volcano is installed elsewhere."""

from __future__ import annotations

import pulumi

from components.kubernetes.objects import installed_chart
from components.kubernetes.resource import CONFIG_MAP_PATCH, KubernetesResource
from components.kubernetes.yaml_text import dump
from components.scheduling.controller_conf import controller_conf
from components.scheduling.volcano_values import scheduler_conf_text, volcano_values
from components.secrets import chart_login, platform_pull_secret
from config.spec.images import volcano_chart, volcano_pull_secret
from config.spec.platform import PlatformSpec
from config.upstream.kubernetes import PATCH_FORCE_ANNOTATION
from config.upstream.volcano import CONTROLLER_CONFIG_MAP, SCHEDULER_CONFIG_MAP, VOLCANO_NAMESPACE, VOLCANO_RELEASE


class VolcanoInstall(pulumi.ComponentResource):
    """Namespace `volcano-system`, the pull Secret of its images (if any) and the chart as a
    `helm.v3.Release`.

    A Release, not `helm.v4.Chart`: the admission webhook's TLS secret is made by a Helm hook Job,
    which Chart v4 drops; without it the webhook never starts and, failing closed, blocks every
    Queue, PodGroup and HyperNode. `protect` guards both the release and its namespace, since
    uninstalling the chart deletes the CRDs and every object of those kinds.
    """

    release: KubernetesResource

    def __init__(self, name: str, spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__("volcano-platform:volcano:VolcanoInstall", name, None, opts)
        volcano = spec.config.volcano
        chart = volcano_chart(spec.config)
        self.release = installed_chart(
            name,
            VOLCANO_RELEASE,
            VOLCANO_NAMESPACE,
            chart,
            volcano.protect,
            self,
            platform_pull_secret(spec, volcano_pull_secret(spec.config), VOLCANO_NAMESPACE),
            volcano.adopt,
            {
                "version": volcano.version,
                "values": volcano_values(spec),
                # The admission init Job must finish before Queues can be created.
                "waitForJobs": True,
                "timeout": 900,
            },
            chart_login(spec, chart),
        )
        self.register_outputs({"release": VOLCANO_RELEASE, "namespace": VOLCANO_NAMESPACE})


FORCED = {"annotations": {PATCH_FORCE_ANNOTATION: "true"}}


class VolcanoPolicy(pulumi.ComponentResource):
    """The scheduler policy of a Volcano installed elsewhere (`volcano.install: false`): the
    scheduler's conf key of the ConfigMap its Deployment mounts, and the controller's discovery
    conf when the controller builds the HyperNodes, each a server-side-apply patch of that key
    alone, so the install's other keys and its own field manager are left alone. The scheduler
    reloads its conf when the mounted file changes (pkg/scheduler/scheduler.go, watchSchedulerConf).
    Both keys are the stack's outright (`pulumi.com/patchForce`): a hand edit (`kubectl edit`, an
    ops console's apply) is taken back by the next `pulumi up` instead of failing it with a
    field conflict, as the node labels and the `default` queue are.
    """

    scheduler_conf: KubernetesResource

    def __init__(self, name: str, spec: PlatformSpec, opts: pulumi.ResourceOptions | None = None):
        super().__init__("volcano-platform:volcano:VolcanoPolicy", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config_map, key = SCHEDULER_CONFIG_MAP
        self.scheduler_conf = KubernetesResource(
            f"{name}-scheduler-conf",
            CONFIG_MAP_PATCH,
            {
                "metadata": {"name": config_map, "namespace": VOLCANO_NAMESPACE, **FORCED},
                "data": {key: scheduler_conf_text(spec)},
            },
            child,
        )
        controller = controller_conf(spec.config.topology)
        if controller:
            config_map, key = CONTROLLER_CONFIG_MAP
            KubernetesResource(
                f"{name}-controller-conf",
                CONFIG_MAP_PATCH,
                {
                    "metadata": {"name": config_map, "namespace": VOLCANO_NAMESPACE, **FORCED},
                    "data": {key: dump(controller)},
                },
                child,
            )
        self.register_outputs({"namespace": VOLCANO_NAMESPACE})
