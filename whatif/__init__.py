"""What-if: the next decisions of the pinned Volcano scheduler for a stack on a cluster as it is.

`model` holds the scheduler's view of a cluster (nodes, queues, PodGroups as jobs, pods as tasks,
HyperNodes), `plugins` and `framework` the policy's extension points and how the scheduler walks its
tiers, `queues` the capacity and proportion plugins, `actions` and `eviction` the actions the policy
enables, `scenario` builds a session from the project's scenario format (the conformance fixtures),
`cluster` from a cluster dump and a rendered stack, `predict` turns one simulated cycle into a
verdict per model and tenant, `explain` says why a Pending gang waits, and `report` prints both.
Every rule cites the function of Volcano v1.15.1 it follows.
"""
