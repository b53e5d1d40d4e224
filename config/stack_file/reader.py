"""Reading `Pulumi.yaml` and `Pulumi.<stack>.yaml` the way the Pulumi CLI would, without it.

Scalars resolve as the CLI resolves them (`config.stack_file.yaml12`). Keys without a namespace belong to
the project, as the CLI rewrites them; a section written both with and without the prefix is
refused (the CLI would keep one of them silently). Project-level defaults apply to keys a stack
does not set. Encrypted values (`secure: v1:...`) cannot be decrypted offline; they become a
placeholder and are marked secret, as the engine marks them, so the program treats them exactly
as it would under `pulumi up`.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
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


def _decrypt_offline(value: Any, path: tuple[object, ...], problems: list[Problem], found: list[Any]) -> Any:
    """Replace `secure:` leaves by the placeholder, collecting their key paths and ciphertexts in
    `found`. A `secure` value that is not ciphertext text is a problem (the CLI cannot decrypt it)."""
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
        found.append((path, value["secure"]))
        return SECRET_PLACEHOLDER
    if isinstance(value, Mapping):
        return {key: _decrypt_offline(item, (*path, key), problems, found) for key, item in value.items()}
    if isinstance(value, list):
        return [_decrypt_offline(item, (*path, index), problems, found) for index, item in enumerate(value)]
    return value


def secret_expected(path: tuple[object, ...]) -> bool:
    """Where the program takes an encrypted value: an entry of `secrets` and `cluster.kubeconfig`.
    Anywhere else the decrypted text would be used as plain text (arguments, labels, summaries)."""
    return (path[:1] == ("secrets",) and len(path) == 2) or path == ("cluster", "kubeconfig")


def _misplaced_secret(path: tuple[object, ...]) -> Problem:
    return Problem(
        join_path(*path),
        "no key here takes an encrypted value: under `pulumi up` the decrypted text would be used as plain text "
        "(in pod arguments, labels or summaries) without a mask",
        "store the value under `secrets` (`pulumi config set --secret --path 'secrets.<name>' <value>`) and refer "
        "to it where a key takes a secret (`env: {NAME: {secret: <name>}}`, `passwordSecret`, `tokenSecret`); "
        "a value that is not secret is written in plain text",
    )


# The passphrase and cloud-KMS secrets managers write `v1:<nonce>:<ciphertext>`; they need the
# stack file's `encryptionsalt` (passphrase) or `encryptedkey` (KMS). Pulumi Cloud's default manager
# keeps its key in the service and writes no such field.
_SYMMETRIC_CIPHERTEXT = re.compile(r"^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$")


def _undecryptable(data: Mapping[str, Any], found: list[Any]) -> list[Problem]:
    if data.get("encryptionsalt") or data.get("encryptedkey"):
        return []
    return [
        Problem(
            stack_key_path(path),
            "the value is encrypted with a passphrase or a cloud key (`v1:...`), but the stack file has no "
            "`encryptionsalt` or `encryptedkey`, so the Pulumi CLI cannot decrypt it",
            "copy the stack file's `encryptionsalt` (or `secretsprovider` and `encryptedkey`) along with the "
            "value, or set the value again with `pulumi config set --secret`",
            got=REDACTED,
        )
        for path, ciphertext in found
        if isinstance(ciphertext, str) and _SYMMETRIC_CIPHERTEXT.match(ciphertext)
    ]


def _base64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def ciphertext_problem(ciphertext: str, symmetric: bool) -> str | None:
    """Why a `secure:` value is no ciphertext the stack's secrets manager could have written, or
    None. The passphrase and cloud-KMS managers write `v1:<nonce>:<ciphertext>`, AES-256-GCM with a
    12-byte nonce, whose output carries a 16-byte tag (`symmetricCrypter`,
    sdk/go/common/resource/config/crypt.go); Pulumi Cloud's manager writes its ciphertext in base64
    (pkg/secrets/service/manager.go)."""
    if symmetric or ciphertext.startswith("v1:"):
        parts = ciphertext.split(":")
        if len(parts) != 3 or parts[0] != "v1":
            return "it is not `v1:<nonce>:<ciphertext>`"
        nonce, sealed = _base64(parts[1]), _base64(parts[2])
        if nonce is None or len(nonce) != 12:
            return "its nonce is not 12 bytes of base64"
        if sealed is None or len(sealed) < 16:
            return "its ciphertext is not base64 of at least the 16-byte tag"
        return None
    return None if _base64(ciphertext) else "it is not base64"


def _not_ciphertext(data: Mapping[str, Any], found: list[Any]) -> list[Problem]:
    symmetric = bool(data.get("encryptionsalt") or data.get("encryptedkey"))
    problems = []
    for path, ciphertext in found:
        why = ciphertext_problem(ciphertext, symmetric) if isinstance(ciphertext, str) and ciphertext else None
        if why:
            problems.append(
                Problem(
                    stack_key_path((*path, "secure")),
                    f"this is no ciphertext the stack's secrets manager could have written ({why}): a placeholder "
                    "the CLI cannot decrypt, so `pulumi preview` and `up` fail on it",
                    "set the value with `pulumi config set --secret --path '<key>' <value>` (docs/operations.md, "
                    "Secrets, says how for each secrets manager)",
                    got=REDACTED,
                )
            )
    return problems


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
    data = _read(path)
    config = _config_section(data)
    result = StackFile(stack=stack, path=path)
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
        found: list[Any] = []
        plain = _decrypt_offline(value, ("config", str(key)), problems, found)
        problems += _non_finite_numbers(plain, ("config", str(key)))
        problems += _undecryptable(data, found)
        problems += _not_ciphertext(data, found)
        if found:
            result.secret_keys.add(full)
        if namespace == PROJECT:
            problems += [
                _misplaced_secret((name, *path[2:])) for path, _ in found if not secret_expected((name, *path[2:]))
            ]
            merged[name] = plain
            if name == "secrets" and isinstance(value, Mapping):
                result.plaintext_secrets = [k for k, v in value.items() if not _is_secure(v)]
                result.problems += [plaintext_secret_problem(k) for k in result.plaintext_secrets]
        else:
            result.pulumi_config[full] = plain if isinstance(plain, str) else cli_json(plain)
    if problems:
        raise ConfigError(problems)
    for name, default in project_defaults(project_dir).items():
        merged.setdefault(name, default)
    result.raw = merged
    for name, value in merged.items():
        # The CLI hands a top-level null to programs as an empty string.
        text = "" if value is None else value if isinstance(value, str) else cli_json(value)
        result.pulumi_config[f"{PROJECT}:{name}"] = text
    return result


EMPTY_STACK_FIX = (
    "write the stack's keys under `config:` (`volcano-platform:cluster: {...}`); to remove a stack's "
    "objects on purpose, run `pulumi destroy`"
)


def _config_section(data: Any) -> Mapping[str, Any]:
    """The `config:` mapping of a stack file. An empty file, a `null`, a list or a `config:` that is
    not a mapping with the project's keys is refused: under `pulumi up` the program would register
    nothing, and the engine would delete every object the stack manages."""
    config = data.get("config") if isinstance(data, Mapping) else None
    if data is None:
        shape = "the stack file is empty"
    elif not isinstance(data, Mapping):
        shape = f"the stack file is {'a list' if isinstance(data, list) else 'not a mapping'}"
    elif not isinstance(config, Mapping) and config is not None:
        shape = "`config:` is not a mapping"
    elif not config:
        shape = "`config:` is empty"
    elif not any(str(key).partition(":")[0] == PROJECT or ":" not in str(key) for key in config):
        shape = f"the stack file sets none of the `{PROJECT}:` keys"
    else:
        return config
    raise ConfigError(
        [Problem("config", f"{shape}, so `pulumi up` would delete every object the stack manages", EMPTY_STACK_FIX)]
    )


def _non_finite_numbers(value: Any, path: tuple[object, ...]) -> list[Problem]:
    """One rule for every number: `.inf` and `.nan` are YAML floats, but no key of the stack means
    anything by them, and JSON (how the CLI hands config to programs) cannot carry them."""
    if isinstance(value, float) and not math.isfinite(value):
        return [
            Problem(
                stack_key_path(path),
                "must be a finite number",
                "write a number such as `0.9` (`.inf` and `.nan` are not numbers a setting can take)",
                got=str(value),
            )
        ]
    if isinstance(value, Mapping):
        return [p for key, item in value.items() for p in _non_finite_numbers(item, (*path, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in _non_finite_numbers(item, (*path, index))]
    return []


def cli_json(value: Any) -> str:
    """An object or list value as the CLI hands it to the program: decoded from the stack file
    into plain Go maps and written again by Go's `json.Marshal` (pulumi
    `sdk/go/common/resource/config/object.go`, `MarshalJSON`), so keys come sorted, the text is
    compact and `<`, `>`, `&` are escaped. The program sees mappings in that order under either
    engine."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def plaintext_secret_problem(name: str) -> Problem:
    return Problem(
        join_path("secrets", name),
        "secret value is stored in plain text",
        f"set it with `pulumi config set --secret --path 'secrets.{name}' <value>`",
    )
