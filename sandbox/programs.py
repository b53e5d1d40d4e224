"""The real cluster's and the real Pulumi's programs, built from their Go modules and cached.

Each folder of `real-cluster/` is a Go module of the project's (its own `go.mod` and `go.sum`) whose
`build.sh` builds one or more upstream programs into a folder. The folder is cached under
`<cache>/real-cluster/<module>-<hash>`, the hash covering every file the build reads, so a warm run
finds every program built and an edited `go.sum` builds that module anew. Building needs Go and the
Go module proxy (or a module cache holding the modules).

    .venv/bin/python -m sandbox.programs     # `make real-cluster`: build (or find) them all
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from offline.programs.build import PROJECT_DIR, cache_dir

APIS = PROJECT_DIR / "volcano-apis"
"""The volcano.sh/apis stand-in the control plane's Volcano build shares with volcano-session."""

SOURCE = Path(__file__).resolve().parents[1] / "real-cluster"
BUILD_TIMEOUT_SECONDS = 3600


def provider_version() -> str:
    """The Kubernetes provider version the stack's SDK asks the engine for."""
    return importlib.metadata.version("pulumi-kubernetes")


@dataclass(frozen=True)
class Module:
    folder: str
    programs: tuple[str, ...]
    shared: tuple[Path, ...] = ()
    """Files outside the module its build also reads."""
    arguments: tuple[str, ...] = ()
    """Extra arguments to build.sh after the output folder."""

    @property
    def source(self) -> Path:
        return SOURCE / self.folder

    def files(self) -> list[Path]:
        found = [self.source / "go.mod", self.source / "go.sum", self.source / "build.sh"]
        found += sorted(self.source.glob("*.go"))
        return found + [p for folder in self.shared for p in sorted(folder.glob("*"))]

    def hash(self) -> str:
        digest = hashlib.sha256()
        for path in self.files():
            digest.update(path.relative_to(SOURCE.parent).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        digest.update("\0".join(self.arguments).encode())
        return digest.hexdigest()[:16]

    def folder_path(self) -> Path:
        return cache_dir() / "real-cluster" / f"{self.folder}-{self.hash()}"


def modules() -> tuple[Module, ...]:
    return (
        Module("etcd", ("etcd",)),
        Module(
            "control-plane",
            (
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
                "kubectl",
                "vc-scheduler",
                "vc-controller-manager",
                "vc-webhook-manager",
            ),
            shared=(APIS,),
        ),
        Module("kwok-lws", ("kwok", "lws-controller")),
        Module("pulumi", ("pulumi",)),
        Module("pulumi-kubernetes", ("pulumi-resource-kubernetes",), arguments=(provider_version(),)),
        Module("inference-router", ("epp", "pd-sidecar", "extproc-client")),
        Module("inference-sim", ("llm-d-inference-sim",)),
    )


class BuildError(Exception):
    """A module failed to build; the message has the end of its output."""


def ensure_built(module: Module) -> Path:
    """The module's folder of programs, built first if needed: one build of a module at a time,
    whichever process asks (a second finds it built once the first is done)."""
    target = module.folder_path()
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{module.folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            _build(module, target)
    return target


def _build(module: Module, target: Path) -> None:
    if shutil.which("go") is None:
        raise BuildError("Go is not installed: the real cluster is built from its Go modules")
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        out = Path(scratch) / "bin"
        out.mkdir()
        command = ["bash", str(module.source / "build.sh"), str(out), *module.arguments]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired as timeout:
            raise BuildError(f"building {module.folder} took over {BUILD_TIMEOUT_SECONDS} s") from timeout
        missing = [p for p in module.programs if not (out / p).is_file()]
        if result.returncode != 0 or missing:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-10:])
            raise BuildError(f"building {module.folder} failed (missing: {', '.join(missing) or 'none'}):\n{tail}")
        os.replace(out, target)


SERVING = ("inference-router", "inference-sim")
"""The modules only the gateway's router tests run; the cluster and Pulumi need the others."""


def programs(progress: Callable[[str], None] | None = None, serving: bool = True) -> dict[str, Path]:
    """Every program by name (without the router's and the model simulator's unless `serving`),
    each module built first if needed (`progress` is told of each build before it starts: the
    first one of a machine takes many minutes)."""
    found: dict[str, Path] = {}
    for module in modules():
        if not serving and module.folder in SERVING:
            continue
        if progress is not None and not module.folder_path().is_dir():
            progress(f"building {module.folder} ({', '.join(module.programs)}) from its Go module")
        folder = ensure_built(module)
        found.update({name: folder / name for name in module.programs})
    return found


BUILDS_AT_ONCE = 2
"""Modules `make real-cluster` builds side by side. A cold build of one leaves much of the machine
idle (it downloads its modules, links one program at a time): one after the other, the five the
cluster and Pulumi need took 34 minutes of a cold `.ci/run` on two cores (`bench/results.md`)."""
LONGEST_FIRST = ("pulumi-kubernetes", "control-plane", "pulumi", "kwok-lws", "etcd", *SERVING)
"""The order builds start in: the longest first, so that no long one starts last; the serving
ones, which only some end-to-end tests wait for, after the rest."""


def _built_or_found(module: Module) -> str:
    """`<module>: <folder> (cached | built in N s)`."""
    started = time.perf_counter()
    cached = module.folder_path().is_dir()
    folder = ensure_built(module)
    took = "cached" if cached else f"built in {time.perf_counter() - started:.0f} s"
    return f"{module.folder}: {folder} ({took})"


def main() -> int:
    """`--core`: every module but the serving ones (`SERVING`); `BUILDS_AT_ONCE` at a time."""
    core = "--core" in sys.argv[1:]
    wanted = sorted(
        (m for m in modules() if not (core and m.folder in SERVING)), key=lambda m: LONGEST_FIRST.index(m.folder)
    )
    failed = False
    with ThreadPoolExecutor(BUILDS_AT_ONCE) as pool:
        for done in as_completed([pool.submit(_built_or_found, module) for module in wanted]):
            try:
                print(done.result(), flush=True)
            except BuildError as why:
                print(f"error: {why}", file=sys.stderr, flush=True)
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
