"""Finding or building the `volcano-session` program.

The binary is cached under a name made from the hash of every file its build reads (`go.mod`,
`go.sum`, the Go sources, the build script), so a change to any of them builds anew and an
unchanged checkout reuses it. Building needs Go and the Go module proxy (or a module cache that
already holds Volcano's dependencies); `make volcano-session` does the same ahead of time.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "volcano-session"
APIS = SOURCE.parent / "volcano-apis"
"""The volcano.sh/apis stand-in every Go module that builds Volcano's code shares."""
BUILD_TIMEOUT_SECONDS = 3600


class EngineUnavailableError(Exception):
    """The real engine cannot be had here; the message says why and what would make it work."""


def cache_dir() -> Path:
    """`$VOLCANO_PLATFORM_CACHE`, else `$XDG_CACHE_HOME/volcano-platform`, else `~/.cache/volcano-platform`."""
    explicit = os.environ.get("VOLCANO_PLATFORM_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "volcano-platform"


def source_files() -> list[Path]:
    """The files the build reads, in a fixed order."""
    found = [SOURCE / "go.mod", SOURCE / "go.sum", SOURCE / "build.sh"]
    found += sorted(SOURCE.glob("*.go")) + sorted(APIS.glob("*"))
    return found


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(path.relative_to(SOURCE.parent).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def binary_path() -> Path:
    return cache_dir() / f"volcano-session-{source_hash()}"


def go_available() -> bool:
    return shutil.which("go") is not None


def ensure_built(*, build: bool = True) -> Path:
    """The binary, built first if needed (`build=False`: only an existing one)."""
    target = binary_path()
    if target.exists():
        return target
    if not SOURCE.is_dir():
        raise EngineUnavailableError(f"the Go program is missing ({SOURCE})")
    if not build:
        raise EngineUnavailableError(f"volcano-session is not built; run `make volcano-session` (it would be {target})")
    if not go_available():
        raise EngineUnavailableError(
            "Go is not installed: the Volcano engine is built from its Go module (`--engine model` needs no Go)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others then find it built
        if not target.exists():
            _build(target)
    return target


def _build(target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        out = Path(scratch) / target.name
        try:
            result = subprocess.run(
                ["bash", str(SOURCE / "build.sh"), str(out)],
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as timeout:
            raise EngineUnavailableError(f"building volcano-session took over {BUILD_TIMEOUT_SECONDS} s") from timeout
        if result.returncode != 0 or not out.exists():
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
            raise EngineUnavailableError(
                f"building volcano-session failed (Go and the module proxy are needed):\n{tail}"
            )
        os.replace(out, target)


def main(argv: list[str]) -> int:
    """`make volcano-session`: build (or find) the program and print its path; with `--if-go`,
    a machine without Go only says so (the tests that need it then skip, or fail in CI)."""
    if "--if-go" in argv and not go_available() and not binary_path().exists():
        print("Go is not installed: the Volcano engine is not built (the what-if uses the model)")
        return 0
    try:
        print(ensure_built())
    except EngineUnavailableError as why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
