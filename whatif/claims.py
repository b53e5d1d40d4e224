"""A model whose weight claim does not exist waits, whatever room there is.

The scheduler's volume binding finds no claim for the pods, so they stay Pending until someone
creates it. Neither engine is given volumes (`whatif.volcano.predict` leaves claims out), so the
verdict is corrected here, from the dump's claims and the ones the stack creates.
"""

from __future__ import annotations

import dataclasses

from config.spec.platform import PlatformSpec
from live.cluster_state import ClusterState
from live.preflight.claims import missing_claims
from whatif.predict import WAITS, Prediction


def with_missing_claims(prediction: Prediction, state: ClusterState, spec: PlatformSpec) -> Prediction:
    missing = missing_claims(spec, state)
    if not missing:
        return prediction
    verdicts = []
    for verdict in prediction.verdicts:
        if verdict.model in missing:
            namespace, claim = missing[verdict.model]
            verdict = dataclasses.replace(
                verdict,
                verdict=WAITS,
                domain="",
                victims=[],
                reason=f"waits for claim `{claim}`, which does not exist in namespace `{namespace}` "
                f"(`models.{verdict.model}.source.pvc`)",
            )
        verdicts.append(verdict)
    return dataclasses.replace(prediction, verdicts=verdicts)
