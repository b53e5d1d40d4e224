"""Where a model's replicas go in the network: each replica inside a domain (`topology`), and
the replicas apart from each other (`spread`)."""

from typing import Annotated, Literal, Self

from pydantic import Field, PlainValidator, WithJsonSchema, model_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import LabelKey


class TopologyConstraint(ConfigModel):
    """Where one replica (one LWS group) may be placed in the network."""

    mode: Literal["soft", "hard"] = "soft"
    """`hard`: all pods of a replica inside one domain at or below the tier, else Pending.
    `soft`: prefer the closest domain, spill over when it is full."""
    highest_tier: Annotated[int, Field(ge=1)] | None = None
    """Highest tier (1 = leaf) the replica may span."""
    highest_tier_name: LabelKey | None = None
    """The same, by tier label key (Volcano >= 1.14)."""

    @model_validator(mode="after")
    def _one_tier(self) -> Self:
        if self.highest_tier is not None and self.highest_tier_name is not None:
            raise invalid(
                "highestTier and highestTierName are both set",
                "give the tier either by number or by label key",
            )
        return self


def _across(value: object) -> str | int:
    if value in ("node", "none"):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise invalid(
        f"`{value}` is neither `node`, `none` nor a tier number",
        "write `node`, `none`, or a tier of the stack's `topology` from 1 (the leaves)",
    )


SpreadAcross = Annotated[
    str | int,
    PlainValidator(_across),
    WithJsonSchema({"anyOf": [{"enum": ["node", "none"]}, {"type": "integer", "minimum": 1}]}),
]


class SpreadConfig(ConfigModel):
    """Replicas kept apart: the pod topology spread constraint Volcano's `predicates` (required)
    and `nodeorder` (preferred) plugins honour, at most one replica more in any domain than in the
    emptiest. For a multi-node model it applies to the leaders, so groups go to different domains."""

    across: SpreadAcross = "node"
    """`node` (each replica on its own host), a tier of the stack's `topology` by number (`1`:
    the leaves, so a lost leaf switch takes one replica), or `none`."""
    required: bool = False
    """`true`: a replica waits rather than land where it would not spread (`DoNotSchedule`).
    Default: spread where the cluster has room (`ScheduleAnyway`, scored at
    `volcano.scheduler.spreadWeight` against binpacking)."""
