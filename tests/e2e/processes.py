"""Processes an end-to-end test runs beside the cluster's: the router (llm-d's endpoint picker),
model simulators and sidecars, and the project's ext-proc client playing the gateway in front of a
router; each with its log, printed when a test fails."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.e2e.conftest import EXTRA_LOGS


def local_arguments(rendered: list[str], replace: dict[str, str]) -> list[str]:
    """The rendered command line with the values a local process needs instead (its ports, the
    config file's path): every other flag runs as rendered."""
    out, values = [], iter(rendered)
    for flag in values:
        if flag.startswith("--") and "=" not in flag and flag in replace:
            out += [flag, replace[flag]]
            next(values)
        else:
            out.append(flag)
    missing = set(replace) - set(out)
    assert not missing, f"the rendered router has no {sorted(missing)}"
    return out


@dataclass
class Processes:
    """The router, the simulator and the client: each with its log in `folder`, all ended at the
    end of the module."""

    folder: Path
    running: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = self.folder / f"{name}.log"
        EXTRA_LOGS.append(log)
        with open(log, "wb") as handle:
            popen = subprocess.Popen(
                argv,
                stdout=handle,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        self.running.append((name, popen))
        return popen

    def check_alive(self) -> None:
        for name, popen in self.running:
            if popen.poll() is not None:
                raise AssertionError(f"{name} exited with {popen.returncode}: see {self.folder / (name + '.log')}")

    def stop(self) -> None:
        for _, popen in reversed(self.running):
            if popen.poll() is None:
                popen.terminate()
        for _, popen in reversed(self.running):
            try:
                popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
        for name, _ in self.running:
            log = self.folder / f"{name}.log"
            if log in EXTRA_LOGS:
                EXTRA_LOGS.remove(log)


class Gateway:
    """The project's ext-proc client (`real-cluster/inference-router/main.go`) in front of the
    router: a request a JSON line in, its events JSON lines out."""

    def __init__(self, program: Path, grpc_port: int, health_port: int, log: Path, arguments: list[str]) -> None:
        """`arguments`: the router's command line, whose `--secure-serving` says whether ext-proc is
        called over TLS (without verifying the router's own certificate, as the gateways do)."""
        self._log_path = log
        self._log = open(log, "w")  # noqa: SIM115 - open for the client's life
        EXTRA_LOGS.append(log)
        self.popen = subprocess.Popen(
            [
                str(program),
                f"-epp=127.0.0.1:{grpc_port}",
                f"-health=127.0.0.1:{health_port}",
                "-ready-timeout=90s",
                f"-tls={'true' if '--secure-serving=true' in arguments else 'false'}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
        )
        self.events: dict[str, dict[str, dict[str, Any]]] = {"answered": {}, "forwarded": {}, "ready": {}}
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="extproc-client", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout: IO[str] = self.popen.stdout  # type: ignore[assignment]
        for line in stdout:
            self._log.write(line)
            self._log.flush()
            event = json.loads(line)
            with self._changed:
                self.events[event["event"]][event.get("id", "")] = event
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_ready(self, seconds: float) -> None:
        self._wait(lambda: "" in self.events["ready"], seconds, "the router to serve (its gRPC health check)")

    def send(self, *requests: dict[str, Any]) -> float:
        """Starts the requests; the time they were handed over."""
        stdin: IO[str] = self.popen.stdin  # type: ignore[assignment]
        stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        stdin.flush()
        return time.time()

    def answered(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        with self._changed:
            return {i: dict(self.events["answered"][i]) for i in ids if i in self.events["answered"]}

    def wait(self, kind: str, ids: list[str], seconds: float) -> dict[str, dict[str, Any]]:
        self._wait(lambda: all(i in self.events[kind] for i in ids), seconds, f"{kind}: {ids}")
        with self._changed:
            return {i: dict(self.events[kind][i]) for i in ids}

    def _wait(self, done: Any, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        with self._changed:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0 or self.popen.poll() is not None:
                    raise AssertionError(f"waited {seconds:.0f} s for {what} (client exit {self.popen.poll()})")
                self._changed.wait(min(left, 0.5))

    def close(self) -> None:
        if self.popen.stdin is not None:
            self.popen.stdin.close()
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        self._reader.join(timeout=5)
        self._log.close()
        if self._log_path in EXTRA_LOGS:
            EXTRA_LOGS.remove(self._log_path)


def scrape(port: int, host: str = "127.0.0.1") -> dict[str, list[tuple[dict[str, str], float]]]:
    """A Prometheus text page: metric name -> (labels, value) per series."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, rest = series.partition("{")
        labels = {}
        for pair in rest.rstrip("}").split('",') if rest else []:
            key, _, quoted = pair.partition("=")
            labels[key.strip(",")] = quoted.strip('"')
        out.setdefault(name, []).append((labels, float(value)))
    return out


def total(page: dict[str, list[tuple[dict[str, str], float]]], name: str) -> float:
    return sum(value for _, value in page.get(name, []))
