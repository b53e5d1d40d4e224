"""The what-if answered by Volcano's own scheduling code.

`build` compiles the project's Go program `volcano-session/` (Volcano v1.15.1's scheduler cache,
actions and plugins, run in-process on a snapshot) into a cache folder; `runner` sends it cases
and reads its answers; `objects` writes the Kubernetes objects and the scheduler configuration a
case is made of.
"""
