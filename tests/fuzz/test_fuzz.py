"""Mutation fuzzing of every input the tool reads: stack files (`render`), cluster dumps
(`preflight`, `import-topology`) and render folders (`diff`). Whatever the input, a command ends
with one of its documented exit codes and, when the input is wrong, an error that names where;
never a traceback, never `internal error`. Seeded, so a failure reproduces."""

from __future__ import annotations

import copy
import json
import random
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.main import main
from offline.render import render_stack, write_render
from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.slow  # hundreds of whole-program runs: `make test` and CI, not the edit loop

SEED = 20261201
STACK_CASES = 200
DUMP_CASES = 90
FOLDER_CASES = 50

# Values that have broken readers before: types, sizes, characters and YAML spellings.
ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**63,
    10**30,
    1e308,
    0.5,
    "",
    " ",
    "x" * 300,
    "a\nb",
    "```\n@here",
    "\u202e\u0000",
    "../../etc",
    "ghp_" + "a" * 36,
    "-1",
    "64Gi",
    "1e400",
    [],
    [None],
    {},
    {"secure": 5},
    {"unknown": 1},
    [{"a": [{"b": []}]}],
]
TEXT_EDITS = ("!!set {a}", "!!binary ZGV2", ".inf", ".nan", "9" * 5000, "&a [*a, *a]", "{", "- [", "\t", "'")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return tree


def _delete(tree: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return None
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return tree


def _mutate_tree(rng: random.Random, tree: Any) -> Any:
    tree = copy.deepcopy(tree)
    for _ in range(rng.randint(1, 3)):
        paths = _paths(tree)
        path = rng.choice(paths)
        action = rng.random()
        if action < 0.55:
            tree = _set(tree, path, copy.deepcopy(rng.choice(ODD_VALUES)))
        elif action < 0.75 and path:
            tree = _delete(tree, path)
        else:
            target = tree
            for key in path:
                target = target[key]
            if isinstance(target, dict):
                target[rng.choice(["zzz", "Name", "a b", "x\ny", "metadata"])] = rng.choice(ODD_VALUES)
            elif isinstance(target, list):
                target.append(copy.deepcopy(rng.choice(ODD_VALUES)))
        if tree is None or not isinstance(tree, (dict, list)):
            break
    return tree


def _mutate_text(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    if not lines:
        return text
    index = rng.randrange(len(lines))
    choice = rng.random()
    if choice < 0.4 and ":" in lines[index]:
        key, _, _ = lines[index].partition(":")
        lines[index] = f"{key}: {rng.choice(TEXT_EDITS)}"
    elif choice < 0.6:
        lines.insert(index, lines[index])  # a duplicate key or item
    elif choice < 0.8:
        lines = lines[:index]  # cut short
    else:
        lines[index] = lines[index][: rng.randrange(len(lines[index]) + 1)]
    return "\n".join(lines) + "\n"


def _assert_clean(code: int, err: str, allowed: tuple[int, ...]) -> None:
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert code in allowed, f"exit {code}\n{err[-2000:]}"
    if code == 2:
        assert any(line.startswith(("  - ", "error: ")) for line in err.splitlines()), err[-2000:]


def _stack_case(index: int) -> str:
    """Case `index`: a mutated stack file, made when the case runs, not at collection."""
    rng = random.Random(f"{SEED}-stack-{index}")
    name = rng.choice(("aicloud-a", "aicloud-b", "dev"))
    text = (PROJECT_DIR / f"Pulumi.{name}.yaml").read_text()
    if rng.random() < 0.7:
        tree = _mutate_tree(rng, yaml.safe_load(text))
        text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True) if tree is not None else ""
    if rng.random() < 0.4:
        text = _mutate_text(rng, text)
    return text


@pytest.mark.parametrize("index", range(STACK_CASES))
def test_a_mutated_stack_file_renders_or_names_its_error(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.fuzz.yaml"
    stack.write_text(_stack_case(index))
    code = main(["render", "--stack", "fuzz", "--config-file", str(stack), "--out", str(tmp_path / "out")])
    _assert_clean(code, capsys.readouterr().err, (0, 2))


@cache
def _dumps() -> list[Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [
        yaml.load(path.read_text(), Loader=loader)
        for path in sorted((PROJECT_DIR / "tests" / "fixtures" / "cluster").glob("**/aicloud-a-*.yaml"))
    ]


COMMANDS = {
    "preflight": ["--stack", "aicloud-a"],  # which renders the stack too
    "whatif": ["--stack", "aicloud-a", "--engine", "model"],
    "import-topology": ["--tiers", "topology.aicloud/leaf-pair"],
}


def _dump_case(index: int) -> tuple[str, str]:
    """Case `index`: a command and a mutated dump, made when the case runs (the what-if's recorded
    clusters are large; making every case at collection would cost every test run)."""
    rng = random.Random(f"{SEED}-dump-{index}")
    tree = _mutate_tree(rng, rng.choice(_dumps()))
    text = json.dumps(tree) if rng.random() < 0.6 else yaml.safe_dump(tree, allow_unicode=True)
    if rng.random() < 0.3:
        text = _mutate_text(rng, text)
    return list(COMMANDS)[index % 3], text


@pytest.mark.parametrize("index", range(DUMP_CASES))
def test_a_mutated_cluster_dump_is_read_or_refused(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command, text = _dump_case(index)
    dump = tmp_path / "cluster.yaml"
    dump.write_text(text)
    code = main([command, *COMMANDS[command], "--from", str(dump)])
    _assert_clean(code, capsys.readouterr().err, (0, 1, 2))


@pytest.fixture(scope="module")
def base_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "base"
    write_render(render_stack(PROJECT_DIR, "dev"), out)
    return out


@pytest.mark.parametrize("index", range(FOLDER_CASES))
def test_a_damaged_render_folder_is_diffed_or_refused(
    index: int, base_render: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED + 2 + index)
    damaged = tmp_path / "damaged"
    shutil.copytree(base_render, damaged)
    files = sorted(p for p in damaged.rglob("*") if p.is_file())
    for _ in range(rng.randint(1, 3)):
        target = rng.choice(files)
        if not target.exists():
            continue
        choice = rng.random()
        if choice < 0.25:
            target.unlink()
        elif choice < 0.5:
            data = target.read_bytes()
            target.write_bytes(data[: rng.randrange(len(data) + 1)])
        elif choice < 0.65:
            target.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))))
        elif target.suffix in (".yaml", ".json"):
            try:
                tree = yaml.safe_load(target.read_text())
            except yaml.YAMLError:
                continue
            mutated = _mutate_tree(rng, tree)
            target.write_text(json.dumps(mutated) if target.suffix == ".json" else yaml.safe_dump(mutated))
    code = main(["diff", str(base_render), str(damaged), *(["--markdown"] if index % 2 else [])])
    _assert_clean(code, capsys.readouterr().err, (0, 1, 2))
