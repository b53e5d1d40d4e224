"""volcano-platform: one GPU cluster as a Volcano-scheduled, multi-tenant AI platform.

Thin on purpose: load and check the whole stack config first (nothing is registered when it is
invalid), then build the platform and export what users need.
"""

import atexit
import gc

# The cyclic collector stays off for the whole run, and is skipped at exit. Registering resources
# builds a heap that only grows (resources, outputs and their futures live until the program
# ends); the collector kept tracing it, at 10,000 nodes for a fifth of the run, with a cost per
# resource that grew with the heap, to free 7% of peak memory. Reference counting still frees
# everything the program drops; the cycles the SDK leaves grow with the number of resources, as
# the rest of the heap does. When the program is done the process exits, and CPython's exit would
# trace the whole heap once more to free those cycles, which the operating system reclaims anyway:
# frozen at exit, the heap is left out of that last collection. bench/results.md has the figures.
gc.disable()
atexit.register(gc.freeze)

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

try:
    # The tenant boundary is proven on every object the platform builds, before any is registered.
    platform = GpuPlatform("platform", spec)
except config.ConfigError as error:
    raise pulumi.RunError(str(error)) from error

pulumi.export("cluster", spec.cluster_name)
pulumi.export("queues", platform.queues)
pulumi.export("endpoints", platform.endpoints)
