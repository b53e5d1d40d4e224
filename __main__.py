"""volcano-platform: one GPU cluster as a Volcano-scheduled, multi-tenant AI platform.

Thin on purpose: load and check the whole stack config first (nothing is registered when it is
invalid), then build the platform and export what users need.
"""

import gc

gc.disable()  # until the imports are done: they create only objects that live for the whole run

import pulumi

import config
from components.platform import GpuPlatform

# Registering thousands of resources builds a heap that only grows (resources, outputs and their
# futures live until the program ends), and the cyclic collector rescans it again and again: at
# 10,000 nodes half of a run went to generation-2 collections. Everything imported so far lives
# for the whole run, so it is frozen out of the collector's sight, and young objects are
# collected in larger batches. Memory stays bounded: what the program frees is still freed by
# reference counting, and the collector still runs.
gc.freeze()
gc.set_threshold(50_000, 20, 100)
gc.enable()

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
