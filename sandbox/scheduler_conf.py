"""The kubelet's part for the sandbox's scheduler: the policy the stack applies to the scheduler's
ConfigMap key, kept as the file the scheduler watches (it reloads it on change,
pkg/scheduler/scheduler.go, watchSchedulerConf), so the real scheduler runs the very policy the
program rendered."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from config.upstream.volcano import SCHEDULER_CONFIG_MAP, VOLCANO_NAMESPACE
from sandbox.api import Api, ApiError


def follow_scheduler_conf(api: Callable[[], Api], path: Path, stop: threading.Event) -> None:
    """Copy the ConfigMap's key into `path` whenever it differs, until `stop` is set."""
    name, key = SCHEDULER_CONFIG_MAP
    while not stop.wait(0.5):
        try:
            data = api().get(f"/api/v1/namespaces/{VOLCANO_NAMESPACE}/configmaps/{name}").get("data") or {}
        except (ApiError, OSError):
            continue
        text = data.get(key)
        if text and text != path.read_text():
            scratch = path.with_suffix(".new")
            scratch.write_text(text)
            os.replace(scratch, path)
