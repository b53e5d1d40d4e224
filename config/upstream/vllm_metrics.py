"""Which Prometheus series a vLLM server exposes, per release: the only `vllm:*` names alert rules,
dashboards and autoscalers may query, and the name each release gives a metric that was renamed.

A rule that names a series its target never exposes is silent forever: it neither fires nor
fails. The table below is read from `vllm/v1/metrics/loggers.py` of every release from 0.8.0 to
0.33.0 (0.15 was not read; a metric first seen in a later release is dated from that release,
which is never too early). Python's prometheus_client appends `_total` to counters; histograms
expose `_bucket`, `_sum` and `_count`. `until` is the first release where the series is gone, or
hidden unless the server runs with `--show-hidden-metrics-for-version`. Volcano's series are in
`config.upstream.volcano_metrics`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

from config.upstream.monitoring import MetricKind, exposed_series
from config.upstream.versions import Version


@dataclass(frozen=True)
class VllmMetric:
    kind: MetricKind
    since: Version = (0, 8, 0)
    until: Version | None = None
    """First release without the series (removed, or hidden by default)."""
    condition: str = ""
    """Set only when the server runs with this option: never a series rules can rely on."""


VLLM_METRICS: Final[dict[str, VllmMetric]] = {
    "vllm:num_requests_running": VllmMetric("gauge"),
    "vllm:num_requests_waiting": VllmMetric("gauge"),
    "vllm:num_requests_waiting_by_reason": VllmMetric("gauge", since=(0, 20, 0)),
    "vllm:gpu_cache_usage_perc": VllmMetric("gauge", until=(0, 11, 0)),
    "vllm:kv_cache_usage_perc": VllmMetric("gauge", since=(0, 10, 0)),
    "vllm:gpu_prefix_cache_queries": VllmMetric("counter", until=(0, 11, 0)),
    "vllm:gpu_prefix_cache_hits": VllmMetric("counter", until=(0, 11, 0)),
    "vllm:prefix_cache_queries": VllmMetric("counter", since=(0, 10, 0)),
    "vllm:prefix_cache_hits": VllmMetric("counter", since=(0, 10, 0)),
    "vllm:external_prefix_cache_queries": VllmMetric("counter", since=(0, 11, 1)),
    "vllm:external_prefix_cache_hits": VllmMetric("counter", since=(0, 11, 1)),
    "vllm:mm_cache_queries": VllmMetric("counter", since=(0, 11, 1)),
    "vllm:mm_cache_hits": VllmMetric("counter", since=(0, 11, 1)),
    "vllm:engine_sleep_state": VllmMetric("gauge", since=(0, 11, 1)),
    "vllm:num_preemptions": VllmMetric("counter"),
    "vllm:prompt_tokens": VllmMetric("counter"),
    "vllm:generation_tokens": VllmMetric("counter"),
    "vllm:prompt_tokens_by_source": VllmMetric("counter", since=(0, 16, 0)),
    "vllm:prompt_tokens_cached": VllmMetric("counter", since=(0, 16, 0)),
    "vllm:prompt_tokens_recomputed": VllmMetric("counter", since=(0, 16, 0), until=(0, 20, 0)),
    "vllm:prompt_tokens_cached_by_source": VllmMetric("counter", since=(0, 32, 0)),
    "vllm:admission_rejections": VllmMetric("counter", since=(0, 32, 0)),
    "vllm:request_success": VllmMetric("counter"),
    "vllm:iteration_tokens_total": VllmMetric("histogram"),
    "vllm:time_to_first_token_seconds": VllmMetric("histogram"),
    "vllm:time_per_output_token_seconds": VllmMetric("histogram", until=(0, 12, 0)),
    "vllm:inter_token_latency_seconds": VllmMetric("histogram", since=(0, 10, 2)),
    "vllm:request_time_per_output_token_seconds": VllmMetric("histogram", since=(0, 11, 0)),
    "vllm:e2e_request_latency_seconds": VllmMetric("histogram"),
    "vllm:request_queue_time_seconds": VllmMetric("histogram"),
    "vllm:request_inference_time_seconds": VllmMetric("histogram"),
    "vllm:request_prefill_time_seconds": VllmMetric("histogram"),
    "vllm:request_decode_time_seconds": VllmMetric("histogram"),
    "vllm:request_prompt_tokens": VllmMetric("histogram"),
    "vllm:request_generation_tokens": VllmMetric("histogram"),
    "vllm:request_max_num_generation_tokens": VllmMetric("histogram"),
    "vllm:request_params_n": VllmMetric("histogram"),
    "vllm:request_params_max_tokens": VllmMetric("histogram"),
    "vllm:request_prefill_kv_computed_tokens": VllmMetric("histogram", since=(0, 13, 0)),
    "vllm:request_num_preemptions": VllmMetric("histogram", since=(0, 30, 0)),
    "vllm:lora_requests_info": VllmMetric("gauge", condition="LoRA adapters enabled"),
    "vllm:corrupted_requests": VllmMetric("counter", since=(0, 11, 1), condition="VLLM_COMPUTE_NANS_IN_LOGITS"),
    "vllm:kv_block_lifetime_seconds": VllmMetric("histogram", since=(0, 12, 0), condition="--kv-cache-metrics"),
    "vllm:kv_block_idle_before_evict_seconds": VllmMetric(
        "histogram", since=(0, 12, 0), condition="--kv-cache-metrics"
    ),
    "vllm:kv_block_reuse_gap_seconds": VllmMetric("histogram", since=(0, 12, 0), condition="--kv-cache-metrics"),
    "vllm:watermark_requests": VllmMetric("counter", since=(0, 32, 0), condition="a watermark config"),
    "vllm:num_requests_kv_fetch_by_stage": VllmMetric("gauge", since=(0, 32, 0), condition="a KV connector"),
}

# vLLM turns every `vllm:*` series off with this flag; monitors and autoscalers need them.
DISABLE_STATS_FLAG: Final = "--disable-log-stats"


@cache
def vllm_series(version: Version) -> frozenset[str]:
    """Series a vLLM server of `version` exposes by default, as scraped."""
    out: set[str] = set()
    for name, metric in VLLM_METRICS.items():
        if metric.condition or version < metric.since or (metric.until is not None and version >= metric.until):
            continue
        out.update(exposed_series(name, metric.kind, suffix_total=True))
    return frozenset(out)


def kv_cache_usage_metric(version: Version) -> str:
    """The KV-cache usage gauge (0..1) of `version`: renamed in 0.10, the old name hidden in 0.11."""
    return (
        "vllm:kv_cache_usage_perc"
        if version >= VLLM_METRICS["vllm:kv_cache_usage_perc"].since
        else ("vllm:gpu_cache_usage_perc")
    )
