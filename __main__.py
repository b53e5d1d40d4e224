"""volcano-platform: one GPU cluster as a Volcano-scheduled, multi-tenant AI platform.

Thin on purpose: load and check the whole stack config first (nothing is registered when it is
invalid), then build the platform and export what users need.
"""

import pulumi

import config
from components.platform import GpuPlatform

try:
    spec = config.load()
except config.ConfigError as error:
    # RunError: Pulumi prints the message alone, without a traceback.
    raise pulumi.RunError(str(error)) from error

for warning in spec.warnings:
    pulumi.log.warn(str(warning))

platform = GpuPlatform("platform", spec)

pulumi.export("cluster", spec.cluster_name)
pulumi.export("queues", platform.queues)
pulumi.export("endpoints", platform.endpoints)
