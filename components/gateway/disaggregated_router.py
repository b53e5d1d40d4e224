"""The router's prefill/decode profile for one slice of a model with prefill and decode apart (pure).

A model's pool holds the serving pods of every slice, and one router per slice stands behind the
pool's endpoint-picker Service. Each router's profiles keep only its own slice's pods, so the
decode pod it picks and the prefill pod it names are always of one slice, which Volcano placed
inside one domain: the KV cache never crosses the slices' domains. The pinned router has no filter
that pairs a prefill with its decode pod's slice (llm-d-inference-scheduler v0.7.1
`pkg/plugins/register.go`); a filter on the slice label in both profiles does it by construction,
and the InferenceObjectives, named per pool, stay one set for the model.

The profile follows v0.7.1's `deploy/config/pd-epp-config.yaml`: `disagg-profile-handler` runs the
`decode` profile first, then asks `prefix-based-pd-decider` whether the prompt's part not cached on
that decode pod is long enough to prefill elsewhere, and if so runs the `prefill` profile;
`disagg-headers-handler` names the chosen prefill pod to decode's sidecar in
`x-prefiller-host-port`. The decider reads the prefix cache's match on the decode pod, which
`prefix-cache-scorer` computes only with the `prepareDataPlugins` gate.
"""

from __future__ import annotations

from typing import Any

from config.platform_labels import SLICE_LABEL
from config.spec.model import ModelSpec
from config.upstream.inference_gateway import DEFAULT_SCORERS, PREPARE_DATA_GATE

SLICE_FILTER = "this-slice"
DECODE_FILTER = "decode-filter"
PREFILL_FILTER = "prefill-filter"
PICKER = "max-score-picker"
DECIDER = "prefix-based-pd-decider"


def slice_profiles(config: dict[str, Any], model: ModelSpec, index: int) -> dict[str, Any]:
    """`config` (the model's router config, with its flow control) with the prefill/decode
    plugins and profiles of slice `index` in place of the default profile."""
    named = [p for p in config["plugins"] if "name" in p]  # the fairness policy's
    plugins = [
        {"name": SLICE_FILTER, "type": "by-label", "parameters": {"label": SLICE_LABEL, "validValues": [str(index)]}},
        {"type": DECODE_FILTER},
        {"type": PREFILL_FILTER},
        *({"type": scorer} for scorer, _ in DEFAULT_SCORERS),
        {"type": PICKER},
        {"type": "disagg-headers-handler"},
        {"type": DECIDER, "parameters": {"nonCachedTokens": model.disaggregation.non_cached_tokens}},
        {"type": "disagg-profile-handler", "parameters": {"deciders": {"prefill": DECIDER}}},
    ]
    return {
        **config,
        "featureGates": [PREPARE_DATA_GATE, *config.get("featureGates", [])],
        "plugins": [*plugins, *named],
        "schedulingProfiles": [
            {
                "name": role,
                "plugins": [
                    {"pluginRef": SLICE_FILTER},
                    {"pluginRef": role_filter},
                    *({"pluginRef": scorer, "weight": weight} for scorer, weight in DEFAULT_SCORERS),
                    {"pluginRef": PICKER},
                ],
            }
            for role, role_filter in (("decode", DECODE_FILTER), ("prefill", PREFILL_FILTER))
        ],
    }
