"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI would, without it.

Scalars resolve as the CLI resolves them (`config.stack_file.yaml12`). Keys without a namespace belong to
the project, as the CLI rewrites them; a section written both with and without the prefix is
refused (the CLI would keep one of them silently). Project-level defaults apply to keys a stack
does not set. Encrypted values (`secure: v1:...`) cannot be decrypted offline; they become a
placeholder and are marked secret, as the engine marks them, so the program treats them exactly
as it would under `pulumi up`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from config.errors import REDACTED, ConfigError, Problem, join_path
from config.project import PROJECT
from config.stack_file.yaml12 import FILE_PATH, StackYamlError, read_yaml

SECRET_PLACEHOLDER = REDACTED


class StackFileError(Exception):
    """The stack or project file cannot be found or does not have the shape of one."""


@dataclass
class StackFile:
    stack: str
    path: Path | None
    raw: dict[str, Any] = field(default_factory=dict)
    """`volcano-platform:` keys without the prefix (the program's config)."""
    pulumi_config: dict[str, str] = field(default_factory=dict)
    """Every key as the engine would hand it to the program (`ns:key` -> JSON text)."""
    secret_keys: set[str] = field(default_factory=set)
    plaintext_secrets: list[str] = field(default_factory=list)
    """Entries of `secrets` written in plain text."""
    problems: list[Problem] = field(default_factory=list)
    """What the file itself gets wrong that the program cannot see: under the engine, one
    encrypted entry makes all of `secrets` secret, hiding plain-text entries beside it."""


def _is_secure(value: object) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _decrypt_offline(value: Any, path: tuple[object, ...], problems: list[Problem]) -> tuple[Any, bool]:
    """Replace `secure:` leaves by the placeholder; report whether any were found. A `secure`
    value that is not ciphertext text is a problem (the CLI cannot decrypt it)."""
    if _is_secure(value):
        if not isinstance(value["secure"], str) or not value["secure"]:
            problems.append(
                Problem(
                    stack_key_path((*path, "secure")),
                    "an encrypted value must be the ciphertext text `pulumi config set --secret` writes",
                    "set it again with `pulumi config set --secret --path '<key>' <value>`",
                    got=REDACTED,
                )
            )
        return SECRET_PLACEHOLDER, True
    if isinstance(value, Mapping):
        found = False
        out = {}
        for key, item in value.items():
            out[key], secret = _decrypt_offline(item, (*path, key), problems)
            found |= secret
        return out, found
    if isinstance(value, list):
        items = [_decrypt_offline(item, (*path, index), problems) for index, item in enumerate(value)]
        return [i for i, _ in items], any(s for _, s in items)
    return value, False


def stack_key_path(path: tuple[object, ...]) -> str:
    """A key path in a stack file as config errors name it: `models.x.env` for the project's own
    keys, `config.<ns>:<key>...` for others."""
    if len(path) >= 2 and path[0] == "config":
        namespace, sep, name = str(path[1]).partition(":")
        if not sep or namespace == PROJECT:
            return join_path(name if sep else namespace, *path[2:])
    return join_path(*path) or FILE_PATH


def _read(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StackFileError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return read_yaml(data, stack_key_path)
    except StackYamlError as error:
        raise ConfigError([_in_file(p, path) for p in error.problems]) from None


def _in_file(problem: Problem, path: Path) -> Problem:
    if problem.path != FILE_PATH:
        return problem
    return Problem(problem.path, f"{path.name}: {problem.message}", problem.fix, problem.got, problem.severity)


def project_defaults(project_dir: Path) -> dict[str, Any]:
    """`config:` declarations of Pulumi.yaml with a `default` or `value`."""
    data = _read(project_dir / "Pulumi.yaml") or {}
    out: dict[str, Any] = {}
    for key, decl in (data.get("config") or {}).items():
        name = key.split(":", 1)[1] if key.startswith(f"{PROJECT}:") else key
        if isinstance(decl, Mapping) and ("default" in decl or "value" in decl):
            out[name] = decl.get("value", decl.get("default"))
        elif not isinstance(decl, Mapping):
            out[name] = decl
    return out


def read_stack(project_dir: Path, stack: str, config_file: Path | None = None) -> StackFile:
    path = config_file or project_dir / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise StackFileError(f"stack file {path} does not exist")
    data = _read(path) or {}
    if not isinstance(data, Mapping) or not isinstance(data.get("config") or {}, Mapping):
        raise StackFileError(f"{path}: expected a mapping with a `config:` mapping")
    result = StackFile(stack=stack, path=path)
    config: Mapping[str, Any] = data.get("config") or {}
    merged: dict[str, Any] = {}
    written_as: dict[str, str] = {}
    problems: list[Problem] = []
    for key, value in config.items():
        namespace, sep, name = str(key).partition(":")
        if not sep:  # the CLI puts keys without a namespace in the project's
            namespace, name = PROJECT, str(key)
        full = f"{namespace}:{name}"
        if full in written_as:
            problems.append(
                Problem(
                    name if namespace == PROJECT else join_path("config", full),
                    f"written twice, as `{written_as[full]}` and as `{key}`; the Pulumi CLI keeps only one of them",
                    "merge them into one entry",
                )
            )
            continue
        written_as[full] = str(key)
        plain, secret = _decrypt_offline(value, ("config", str(key)), problems)
        if secret:
            result.secret_keys.add(full)
        if namespace == PROJECT:
            merged[name] = plain
            if name == "secrets" and isinstance(value, Mapping):
                result.plaintext_secrets = [k for k, v in value.items() if not _is_secure(v)]
                result.problems += [plaintext_secret_problem(k) for k in result.plaintext_secrets]
        else:
            result.pulumi_config[full] = plain if isinstance(plain, str) else json.dumps(plain)
    if problems:
        raise ConfigError(problems)
    for name, default in project_defaults(project_dir).items():
        merged.setdefault(name, default)
    result.raw = merged
    for name, value in merged.items():
        # The CLI hands a top-level null to programs as an empty string.
        text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
        result.pulumi_config[f"{PROJECT}:{name}"] = text
    return result


def plaintext_secret_problem(name: str) -> Problem:
    return Problem(
        join_path("secrets", name),
        "secret value is stored in plain text",
        f"set it with `pulumi config set --secret --path 'secrets.{name}' <value>`",
    )
