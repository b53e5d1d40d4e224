"""Sub-groups of a PodGroup (`spec.subGroupPolicy`): `pkg/scheduler/api/sub_job_info.go`.

A pod joins the first policy whose label selector matches and whose `matchLabelKeys` it carries
(non-empty); the values name the sub-group. A policy without `matchLabelKeys` never captures a pod.
Pods no policy captures form the default sub-group, which needs the job's `minMember` when the
job has no policy and 1 when it has some, and carries the job's own network topology
(`api/job_info.go` `getOrCreateDefaultSubJob`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whatif.scheduler.model import (
    ALLOCATED_STATUSES,
    PENDING,
    PIPELINED,
    SUCCEEDED,
    Job,
    SubGroupPolicy,
    Task,
    Topology,
)


@dataclass(eq=False)
class SubJob:
    key: str
    policy: SubGroupPolicy | None
    min_available: int
    tasks: list[Task] = field(default_factory=list)
    index: int = 0
    job: Job | None = None
    """The job, for the default sub-group, whose topology is the job's."""

    @property
    def topology(self) -> Topology | None:
        """The policy's topology; the job's for the default sub-group (`getOrCreateDefaultSubJob`
        copies the PodGroup's `networkTopology`, adjusted with the job's by `adjustNetworkTopologySpec`)."""
        if self.policy is not None:
            return self.policy.topology
        return self.job.topology if self.job is not None else None

    def ready_num(self, pipelined: bool = False) -> int:
        statuses = ALLOCATED_STATUSES | {SUCCEEDED} | ({PIPELINED} if pipelined else set())
        return sum(1 for t in self.tasks if t.status in statuses or (t.status == PENDING and t.best_effort))

    def is_ready(self) -> bool:
        return self.ready_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return self.ready_num(True) >= self.min_available

    def pending(self) -> list[Task]:
        """The pods still to place (BestEffort ones count as ready and are left to backfill)."""
        return [t for t in self.tasks if t.status == PENDING and not t.best_effort]


def _policy_of(task: Task, policies: list[SubGroupPolicy]) -> tuple[SubGroupPolicy, tuple[str, ...]] | None:
    for policy in policies:
        if any(task.labels.get(k) != v for k, v in policy.match_labels.items()):
            continue
        values = tuple(task.labels.get(k, "") for k in policy.match_keys)
        if policy.match_keys and all(values):
            return policy, values
    return None


def subjobs(job: Job) -> list[SubJob]:
    """The job's sub-groups, default first, then in the order their first pod appears (the list
    is shared: callers read it)."""
    if job.parts is None or job.parts[0] != len(job.tasks):
        job.parts = (len(job.tasks), _split(job))
    return job.parts[1]


def _split(job: Job) -> list[SubJob]:
    default = SubJob(f"{job.uid}/default", None, 1 if job.subgroups else job.min_member, job=job)
    found: dict[str, SubJob] = {}
    for task in job.tasks:
        matched = _policy_of(task, job.subgroups) if job.subgroups else None
        if matched is None:
            default.tasks.append(task)
            continue
        policy, values = matched
        key = f"{job.uid}/{policy.name}-{'-'.join(values)}"
        if key not in found:
            index = int(values[0]) if values[0].isdigit() else len(found)
            found[key] = SubJob(key, policy, policy.size, index=index)
        found[key].tasks.append(task)
    out = [default] if default.tasks or not found else []
    return out + sorted(found.values(), key=lambda s: (s.index, s.key))


def _per_policy(job: Job) -> dict[str, list[SubJob]]:
    groups: dict[str, list[SubJob]] = {p.name: [] for p in job.subgroups}
    for sub in subjobs(job):
        if sub.policy is not None:
            groups[sub.policy.name].append(sub)
    return groups


def subgroups_valid(job: Job) -> bool:
    if not job.subgroups:
        return True
    groups = _per_policy(job)
    return all(len(groups[p.name]) >= p.min_subgroups for p in job.subgroups)


def subgroups_ready(job: Job, pipelined: bool) -> bool:
    if not job.subgroups:
        return True
    groups = _per_policy(job)
    for policy in job.subgroups:
        if policy.min_subgroups > 0:
            ready = sum(1 for s in groups[policy.name] if (s.is_pipelined() if pipelined else s.is_ready()))
            if ready < policy.min_subgroups:
                return False
    return True


def subgroups_pipelined(job: Job) -> bool:
    return subgroups_ready(job, True)
