"""`priorityClasses`: the PriorityClasses that order and preempt workloads."""

from typing import Annotated, Literal

from pydantic import Field

from config.schema.base import ConfigModel
from config.upstream.kubernetes import PRIORITY_VALUE_MAX


class PriorityClassConfig(ConfigModel):
    """One PriorityClass; the key is its name."""

    value: Annotated[int, Field(ge=-PRIORITY_VALUE_MAX, le=PRIORITY_VALUE_MAX)]
    """Priority; higher runs first and may preempt lower."""
    preemption_policy: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    """`Never` lets the class queue ahead without evicting anyone."""
    global_default: bool = False
    """Use this class for pods that name none (at most one class)."""
    description: str = ""
    """Shown by `kubectl get priorityclass`."""
    adopt: bool = False
    """The class already exists (made by hand) and the stack takes it over instead of creating
    it. Its `value` and `preemptionPolicy` cannot change and must already match; `pulumi up`
    updates the description and labels in place (`preflight` shows the differences)."""


DEFAULT_PRIORITY_CLASSES: dict[str, PriorityClassConfig] = {
    "p0-critical": PriorityClassConfig(
        value=1_000_000,
        description="Production inference: scheduled first, preempts lower classes.",
    ),
    "p1-high": PriorityClassConfig(value=100_000, description="Important training and staging inference."),
    "p2-normal": PriorityClassConfig(value=10_000, description="Regular training, fine-tuning and batch jobs."),
    "p3-low": PriorityClassConfig(
        value=1_000,
        preemption_policy="Never",
        description="Experiments and debugging: runs on spare GPUs, never preempts.",
    ),
}
"""Used when a stack does not set `priorityClasses`; a stack that sets it replaces the set."""
