"""What-if: the next decisions of the pinned Volcano scheduler for a stack on a cluster as it is.

`scheduler` models Volcano v1.15.1 (sessions, plugins, actions). `cluster` and `workload` build a
session from a cluster dump and a rendered stack, `predict` turns simulated cycles into a verdict per
model and tenant, `reasons` says why a gang does not run, and `report` prints both. Every rule cites
the function of Volcano it follows.
"""
