"""The generated JSON Schema and configuration reference: current, and in agreement with the loader."""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
import yaml

from config.schema.base import SCHEMA_DOCS_VARIABLE
from config.schema.export import (
    INCLUDE_SCHEMA_FILE,
    REFERENCE_FILE,
    SCHEMA_FILE,
    include_file_schema,
    stack_file_schema,
)
from config.schema.reference import reference_markdown
from config.sections.stack import TOP_LEVEL_KEYS, StackConfig
from tests.conftest import PROJECT_DIR, STACKS


@functools.cache
def _generated() -> dict[str, str]:
    """The schemas and the reference as `make schema` writes them: in a process whose models carry
    their docstrings (`SCHEMA_DOCS_VARIABLE`), which a command's models leave out."""
    program = (
        "import json; from config.schema.export import include_schema_text, schema_text;"
        "from config.schema.reference import reference_markdown;"
        "print(json.dumps({'schema': schema_text(), 'include': include_schema_text(),"
        " 'reference': reference_markdown()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=PROJECT_DIR,
        env={**os.environ, SCHEMA_DOCS_VARIABLE: "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_committed_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text() == _generated()["schema"], "run `make schema` and commit schema/"
    assert INCLUDE_SCHEMA_FILE.read_text() == _generated()["include"], "run `make schema` and commit schema/"


def test_a_command_builds_the_models_without_their_docstrings() -> None:
    """Reading each model's source for its docstrings is left to `make schema`."""
    assert os.environ.get(SCHEMA_DOCS_VARIABLE) != "1"
    assert StackConfig.model_fields["cluster"].description is None
    assert (
        "description"
        in json.loads(_generated()["schema"])["properties"]["config"]["properties"]["volcano-platform:cluster"]
    )


def _model_classes(base: type) -> list[type]:
    found = []
    for sub in base.__subclasses__():
        found += [sub, *_model_classes(sub)]
    return found


def test_the_models_annotations_are_not_strings() -> None:
    """Pydantic evaluates a string annotation (what `from __future__ import annotations` makes of
    every one) each time it builds a model; objects are taken as they are. For the 80 models a
    command builds before it reads a stack, that was about a tenth of the import of `config`."""
    import __future__

    import config  # noqa: F401  (every section's models)
    from config.schema.base import ConfigModel

    modules = {cls.__module__ for cls in _model_classes(ConfigModel) if cls.__module__.startswith("config.")}
    assert len(modules) > 15
    postponed = sorted(m for m in modules if getattr(sys.modules[m], "annotations", None) is __future__.annotations)
    assert not postponed, f"drop `from __future__ import annotations` from {postponed}"


def test_a_command_does_not_search_for_pydantic_plugins() -> None:
    """Pydantic's plugin search reads the entry points of every installed distribution when the
    first model is built; the console script switches it off, as a user's own setting would."""
    program = (
        "import cli, os; os.environ.pop('PYDANTIC_DISABLE_PLUGINS', None); cli._quiet_start();"
        "import config, gc; from pydantic.plugin import _loader;"
        "print(_loader._plugins is None, gc.isenabled())"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", program], cwd=PROJECT_DIR, env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["True", "False"], done.stderr


INCLUDED_FILES = sorted(p for p in (PROJECT_DIR / "clusters").rglob("*.yaml"))


@functools.cache
def _validator(which: str) -> Any:
    """A checked validator per schema, built once: `jsonschema.validate` checks the schema itself
    on every call, which for these schemas costs more than the validation."""
    schema = include_file_schema() if which == "include" else stack_file_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("path", INCLUDED_FILES, ids=lambda p: str(p.relative_to(PROJECT_DIR)))
def test_committed_included_files_validate_against_their_schema(path: Any) -> None:
    validator = _validator("include")
    validator.validate(yaml.safe_load(path.read_text()))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"secrets": {"a": "b"}})


def test_committed_reference_is_current() -> None:
    assert REFERENCE_FILE.read_text() == _generated()["reference"], "run `make schema` and commit docs/configuration.md"


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stack_files_validate_against_the_schema(stack: str) -> None:
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    _validator("stack").validate(document)


def test_schema_rejects_what_the_loader_rejects() -> None:
    schema = stack_file_schema()
    document = yaml.safe_load((PROJECT_DIR / "Pulumi.dev.yaml").read_text())
    for change in (
        lambda d: d["config"].update({"volcano-platform:tenant": {}}),
        lambda d: d["config"]["volcano-platform:models"]["qwen3-0-6b"].update(replica=2),
        lambda d: d["config"]["volcano-platform:cluster"].update(gpusPerNode="2"),
    ):
        broken = copy.deepcopy(document)
        change(broken)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)
    allowed = copy.deepcopy(document)
    allowed["config"]["kubernetes:context"] = "other-namespace-keys-pass"
    allowed["config"]["volcano-platform:secrets"] = {"hf-token": {"secure": "v1:abc"}}
    jsonschema.validate(allowed, schema)


def test_reference_documents_every_key() -> None:
    text = reference_markdown()
    for key in TOP_LEVEL_KEYS:
        assert f"## `volcano-platform:{key}`" in text
    schema = json.loads(SCHEMA_FILE.read_text())
    for name, definition in schema["$defs"].items():
        for prop in definition.get("properties", {}):
            assert f".{prop}`" in text, f"{name}.{prop} is not in the reference"


def test_every_pattern_of_the_sections_is_put_in_words() -> None:
    """An error never shows a regular expression: each `Field(pattern=...)` has its words."""
    from config.schema.base import PATTERN_WORDS
    from config.sections.stack import StackConfig

    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(StackConfig.__pydantic_core_schema__)  # what pydantic validates, not the JSON Schema's hints
    assert found and found <= set(PATTERN_WORDS), found - set(PATTERN_WORDS)
