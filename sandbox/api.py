"""Talking to the sandbox's API server, and the ports and certificates its processes use."""

from __future__ import annotations

import base64
import json
import random
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADMIN_TOKEN = "e2e-admin-token"
"""A static token of the e2e cluster alone (loopback only, deleted with it)."""
PREVIEW_USER, PREVIEW_TOKEN = "e2e-preview", "e2e-preview-token"
"""A user with no rights but what a test binds to it (the preview identity)."""
WORKLOAD_USER, WORKLOAD_TOKEN = "e2e-workload", "e2e-workload-token"
"""A second user with no rights but what a test binds to it: a process that reads with a
workload's Role beside one reading with the preview user's."""


_HANDED_OUT: set[int] = set()


def _ephemeral_start() -> int:
    """The lowest port the kernel gives outgoing connections (Linux: 32768 unless configured)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range and not handed out before by
    this process. A port the kernel picks (binding port 0) is in that range, where any outgoing
    connection, such as the API server's to etcd, can take it as its local port before the
    process given it binds it: LWS's metrics server once failed with "address already in use"."""
    top = _ephemeral_start()
    for _ in range(1000):
        port = random.randrange(10000, top)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free loopback port between 10000 and {top}")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@dataclass(frozen=True)
class Certificates:
    """A CA, one serving certificate for 127.0.0.1 signed by it (the API server and every
    webhook), and the service-account signing key pair."""

    folder: Path

    @classmethod
    def make(cls, folder: Path) -> Certificates:
        folder.mkdir(parents=True, exist_ok=True)
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
                 "-days", "2", "-subj", "/CN=volcano-platform-e2e-ca", cwd=folder)  # fmt: skip
        (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
                 "-subj", "/CN=127.0.0.1", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "tls.crt", "-days", "2", "-extfile", "san.cnf", cwd=folder)  # fmt: skip
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=folder)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=folder)
        return cls(folder)

    def path(self, name: str) -> str:
        return str(self.folder / name)


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl command whose message says what kubectl said."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{(self.stderr or '').strip()[-2000:]}"


class ApiError(Exception):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


@dataclass
class Api:
    """The few API calls the harness makes itself (tests use kubectl, as users do)."""

    server: str
    token: str
    ca_file: str

    def __post_init__(self) -> None:
        self._context = ssl.create_default_context(cafile=self.ca_file)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=30) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, error.read().decode(errors="replace")) from None
        return json.loads(text) if text.startswith(("{", "[")) else text

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def apply(self, obj: dict[str, Any], path: str) -> Any:
        """Server-side apply of `obj` at `path` (its resource URL) as field manager `e2e-harness`."""
        return self.request(
            "PATCH",
            f"{path}?fieldManager=e2e-harness&force=true",
            json.dumps(obj).encode(),
            "application/apply-patch+yaml",
        )


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()
