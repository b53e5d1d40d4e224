"""The layout keeps the architecture: data flows one way, from the stack file to the command line.

Every import of the project's own modules (at module level, inside functions and under
`TYPE_CHECKING` alike) goes from a layer to the same or a lower one, and no two modules import each
other, however indirectly. Folders stay small enough to read (about 15 modules) and modules short
enough to hold in one's head (about 400 lines)."""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

# Lowest first. A module belongs to the layer of the longest entry that names it or a package of it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("config.upstream", "config.credential_shapes", "config.errors", "config.project", "config.platform_labels"),
    ("config.stack_file",),
    ("config.schema.base", "config.schema.names", "config.schema.quantity", "config.schema"),
    ("config.sections",),
    ("config.schema.export", "config.schema.reference", "config.schema.__main__"),
    ("config.spec",),
    ("config.checks",),
    ("config.model_defaults", "config.handover", "config.loader", "config"),
    ("components",),
    ("policy",),
    ("offline",),
    ("live",),
    ("whatif",),
    ("sandbox",),
    ("fleet",),
    ("cli", "offline.__main__", "live.__main__"),
    ("bench",),
    ("__main__",),
)
PACKAGES = ("config", "components", "policy", "offline", "live", "whatif", "sandbox", "fleet", "cli", "bench")
MAX_MODULES_PER_FOLDER = 17  # whatif/scheduler: one module per concept of Volcano's scheduler
MAX_LINES_PER_MODULE = 420


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    tracked = subprocess.run(
        ["git", "-C", str(PROJECT_DIR), "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    paths = [PROJECT_DIR / name for name in tracked if (PROJECT_DIR / name).is_file()]
    return {
        _module_name(p): p
        for p in paths
        if p.relative_to(PROJECT_DIR).parts[0] in PACKAGES or (p.name == "__main__.py" and p.parent == PROJECT_DIR)
    }


def _own(name: str) -> str | None:
    """The project module an imported name refers to (`config.spec.model` for
    `config.spec.model.ModelSpec`), if it is one of the project's."""
    modules = _modules()
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _own(alias.name)) is not None:
                    yield target
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (target := _own(f"{node.module}.{alias.name}") or _own(node.module)) is not None:
                    yield target


@cache
def _graph() -> dict[str, set[str]]:
    return {name: set(_imports(path)) - {name} for name, path in _modules().items()}


def _layer(module: str) -> int:
    """The layer of the longest entry of LAYERS that is the module or a package holding it."""
    matches = [
        (len(prefix), index)
        for index, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    if not matches:
        raise AssertionError(f"module {module} is in no layer: add it to LAYERS in {__file__}")
    return max(matches)[1]


def test_every_module_is_in_a_layer() -> None:
    assert len(_modules()) > 100
    for module in _modules():
        _layer(module)


def test_no_import_goes_from_a_lower_layer_into_a_higher_one() -> None:
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_checker_sees_an_upward_import_and_a_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = {name: set(targets) for name, targets in _graph().items()}
    graph["config.spec.model"] = {*graph["config.spec.model"], "components.platform"}
    monkeypatch.setattr(f"{__name__}._graph", lambda: graph)
    with pytest.raises(AssertionError, match=r"config\.spec\.model \(layer \d+\) imports components\.platform"):
        test_no_import_goes_from_a_lower_layer_into_a_higher_one()
    graph["config.spec.gang"] = {*graph["config.spec.gang"], "config.spec.model"}
    with pytest.raises(AssertionError, match=r"config\.spec\.model -> config\.spec\.gang -> config\.spec\.model"):
        test_no_import_cycle()


def test_folders_and_modules_stay_small() -> None:
    folders: dict[Path, int] = {}
    long: list[str] = []
    for path in _modules().values():
        folders[path.parent] = folders.get(path.parent, 0) + 1
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES_PER_MODULE:
            long.append(f"{path.relative_to(PROJECT_DIR)}: {lines} lines")
    crowded = [f"{folder.relative_to(PROJECT_DIR)}: {count} modules" for folder, count in folders.items()]
    assert [c for c in crowded if int(c.rsplit(": ", 1)[1].split()[0]) > MAX_MODULES_PER_FOLDER] == []
    assert long == []


def test_test_folders_mirror_the_packages() -> None:
    tests = {p.parent.name for p in (PROJECT_DIR / "tests").glob("*/test_*.py")}
    assert {"config", "components", "offline", "live", "policy", "project"} <= tests
    assert not list((PROJECT_DIR / "tests").glob("test_*.py")), "tests live in the folder of the layer they test"
