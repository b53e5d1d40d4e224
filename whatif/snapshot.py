"""A session from a cluster snapshot alone, with no stack: what the scheduler holds on its next
cycle. The differential tests give the same objects to the model (through this) and to Volcano's
own code (`whatif.volcano`), so the model is checked on the path it reads real clusters with.
"""

from __future__ import annotations

from typing import Any

from config.upstream.volcano import GROUP_NAME_ANNOTATION
from live.cluster_state import ClusterState
from whatif.cluster import (
    _nodes,
    _priority_classes,
    _queue,
    _task,
    by_creation,
    dump_hypernodes,
    hold_arrivals,
    pod_group_job,
    pod_request,
)
from whatif.scheduler.model import Job, Queue
from whatif.scheduler.resources import add
from whatif.scheduler.session import Session

FINISHED = ("Succeeded", "Failed")


def snapshot_session(state: ClusterState) -> Session:
    priorities, default = _priority_classes(state)
    queues: dict[str, Queue] = {}
    for order, obj in enumerate(by_creation(state.queues, "Queue")):
        queues[obj["metadata"]["name"]] = _queue(obj, (obj.get("status") or {}).get("state", "Open"), order)
    nodes = _nodes(state)
    jobs: dict[str, Job] = {}
    pods: dict[str, dict[str, Any]] = {}
    for order, obj in enumerate(by_creation(state.pod_groups, "PodGroup")):
        job = pod_group_job(obj, priorities, default, order)
        jobs[job.uid] = job
    for order, pod in enumerate(by_creation(state.pods, "Pod")):
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        if (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        group = (metadata.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        owner = jobs.get(f"{metadata.get('namespace', 'default')}/{group}") if group else None
        if owner is None:
            node = nodes.get(spec.get("nodeName") or "")
            if node is not None:  # not Volcano's: it holds its node all the same
                add(node.used, pod_request(spec))
                node.other_pods += 1
                node.refresh()
            continue
        task = _task(pod, owner.uid, priorities, default, order)
        owner.tasks.append(task)
        pods[task.uid] = pod
    live = {uid: job for uid, job in jobs.items() if job.queue in queues}
    session = Session(nodes, queues, live, dump_hypernodes(state, nodes))
    hold_arrivals(session, pods, state.restarting_groups)
    return session
