"""The resolved spec (`PlatformSpec`) and how each derived fact is computed once: tenants and models
with their namespaces and queues, a model's gang, the topology tree and its capacities, placement,
the scheduler policy, images and the Secrets the workloads need. Components and checks read these
facts; none of them derives its own."""
