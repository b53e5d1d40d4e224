"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI would, without it.

Project-level defaults apply to keys a stack does not set. Encrypted values (`secure: v1:...`)
cannot be decrypted offline; they become a placeholder and are marked secret, as the engine marks
them, so the program treats them exactly as it would under `pulumi up`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config import PROJECT
from config.errors import REDACTED

SECRET_PLACEHOLDER = REDACTED


class StackFileError(Exception):
    """The stack or project file cannot be read (missing, not YAML, wrong shape)."""


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


def _is_secure(value: object) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _decrypt_offline(value: Any) -> tuple[Any, bool]:
    """Replace `secure:` leaves by the placeholder; report whether any were found."""
    if _is_secure(value):
        return SECRET_PLACEHOLDER, True
    if isinstance(value, Mapping):
        found = False
        out = {}
        for key, item in value.items():
            out[key], secret = _decrypt_offline(item)
            found |= secret
        return out, found
    if isinstance(value, list):
        items = [_decrypt_offline(item) for item in value]
        return [i for i, _ in items], any(s for _, s in items)
    return value, False


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise StackFileError(f"{path}: not valid YAML: {exc}") from None


def project_defaults(project_dir: Path) -> dict[str, Any]:
    """`config:` declarations of Pulumi.yaml with a `default` or `value`."""
    data = _read_yaml(project_dir / "Pulumi.yaml") or {}
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
    data = _read_yaml(path) or {}
    if not isinstance(data, Mapping) or not isinstance(data.get("config", {}), Mapping):
        raise StackFileError(f"{path}: expected a mapping with a `config:` mapping")
    result = StackFile(stack=stack, path=path)
    config: Mapping[str, Any] = data.get("config") or {}
    merged: dict[str, Any] = {}
    for key, value in config.items():
        namespace, sep, name = str(key).partition(":")
        if not sep:  # un-namespaced keys belong to the project
            namespace, name = PROJECT, str(key)
        plain, secret = _decrypt_offline(value)
        full = f"{namespace}:{name}"
        if secret:
            result.secret_keys.add(full)
        if namespace == PROJECT:
            merged[name] = plain
            if name == "secrets" and isinstance(value, Mapping):
                result.plaintext_secrets = [k for k, v in value.items() if not _is_secure(v)]
        else:
            result.pulumi_config[full] = plain if isinstance(plain, str) else json.dumps(plain)
    for name, default in project_defaults(project_dir).items():
        merged.setdefault(name, default)
    result.raw = merged
    for name, value in merged.items():
        result.pulumi_config[f"{PROJECT}:{name}"] = value if isinstance(value, str) else json.dumps(value)
    return result
