"""Loading: raw stack config -> validated, resolved, cross-checked `PlatformSpec`.

`load_raw` is pure (used by the offline engine and tests); `load_from_pulumi` reads the same
keys from the Pulumi runtime. Either returns a spec or raises one `ConfigError` listing every
problem; nothing is registered before this returns."""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from config.checks import run_checks
from config.checks.credentials import kubeconfig_credentials, kubeconfig_problem
from config.checks.tenancy.tenant_files import check_tenant_files
from config.errors import ConfigError, Problem, errors_of, join_path, warnings_of
from config.handover import handover_problems
from config.model_defaults import apply_model_defaults, blame_model_defaults, relocate_inherited
from config.project import PROJECT
from config.schema.base import problems_from_validation_error
from config.sections.stack import TOP_LEVEL_KEYS, StackConfig
from config.spec.placement import plan_placements
from config.spec.platform import PlatformSpec
from config.spec.resolve import resolve
from config.stack_file.includes import Included, Origins, file_of, merge_includes, stack_dir
from config.stack_file.reader import plaintext_secret_problem

# `kubernetes:*` keys configure the default provider, which this program never uses: every
# resource goes through the explicit provider built from `cluster`.
_PROVIDER_KEYS = {"context": "cluster.context", "kubeconfig": "cluster.kubeconfig"}


def foreign_key_problems(keys: Collection[str]) -> list[Problem]:
    """Stack config keys outside the project's namespace that the user meant for this program: a
    section under another prefix (`volcano:cluster`) or a `kubernetes:` key the explicit provider
    would ignore (the stack would then silently target the ambient cluster)."""
    problems: list[Problem] = []
    for key in sorted(keys):
        namespace, sep, name = key.partition(":")
        if not sep or namespace in (PROJECT, "pulumi"):
            continue
        section = name.split(".", 1)[0]
        if namespace == "kubernetes":
            target = _PROVIDER_KEYS.get(section)
            problems.append(
                Problem(
                    join_path("config", key),
                    f"`{key}` configures the default Kubernetes provider, which this program does not use; "
                    "every resource goes through the provider built from `cluster`",
                    f"set `{PROJECT}:{target}` instead" if target else "remove it",
                )
            )
        elif section in TOP_LEVEL_KEYS or difflib.get_close_matches(namespace, [PROJECT], n=1, cutoff=0.6):
            problems.append(
                Problem(
                    join_path("config", key),
                    f"`{key}` is under the namespace `{namespace}`, so this program never reads it",
                    f"write it as `{PROJECT}:{name}`",
                )
            )
    return problems


def load_raw(
    raw: Mapping[str, Any],
    stack: str,
    plaintext_secrets: Collection[str] = (),
    other_keys: Collection[str] = (),
    encrypted: Collection[str] = (),
    base_dir: Path | None = None,
) -> PlatformSpec:
    """Validate a stack's config (top-level keys without the project prefix).

    `plaintext_secrets` names entries of `secrets` that were not stored encrypted; `other_keys`
    are the stack's config keys in other namespaces (`<namespace>:<key>`); `encrypted` names the
    top-level keys that hold encrypted values; `base_dir` is the folder the stack's included
    files are read from (default: the stack files' folder, `config.stack_file.includes.stack_dir`).
    """
    included = merge_includes(raw, stack_dir() if base_dir is None else base_dir)
    if errors_of(included.problems):
        raise ConfigError(included.problems)
    try:
        spec = _load_merged(included.raw, stack, plaintext_secrets, other_keys, encrypted, included)
    except ConfigError as error:
        raise ConfigError(in_files(list(error.problems), included.origins)) from None
    # Warnings name the included file their key is in, as errors do.
    return dataclasses.replace(spec, warnings=tuple(in_files(list(spec.warnings), included.origins)))


def in_files(problems: list[Problem], origins: Origins) -> list[Problem]:
    """Problems with the included file their key path points into."""
    if not origins:
        return problems
    return [
        dataclasses.replace(p, file=found) if not p.file and (found := file_of(p.path, origins)) else p
        for p in problems
    ]


def _load_merged(
    raw: Mapping[str, Any],
    stack: str,
    plaintext_secrets: Collection[str],
    other_keys: Collection[str],
    encrypted: Collection[str],
    included: Included | None = None,
) -> PlatformSpec:
    problems: list[Problem] = foreign_key_problems(other_keys)
    tenant_files = included.tenant_files if included is not None else {}
    written = included.tenant_raw if included is not None else {}
    origins = included.origins if included is not None else {}
    tenant_file_models = frozenset(
        entry[1] for entry, file in origins.items() if entry[0] == "models" and len(entry) == 2 and file in written
    )
    # An empty mapping means "not set": it is how Pulumi.yaml declares optional keys.
    data = {k: v for k, v in raw.items() if not (k in TOP_LEVEL_KEYS and isinstance(v, Mapping) and not v)}
    data = apply_model_defaults(data, problems)
    try:
        config = StackConfig.model_validate_json(json.dumps(data, default=str))
    except ValidationError as exc:
        relocate = blame_model_defaults(raw.get("models"), raw.get("modelDefaults"))
        raise ConfigError(problems + problems_from_validation_error(exc, StackConfig, relocate)) from None
    problems += [plaintext_secret_problem(name) for name in plaintext_secrets]
    problems += _misplaced_secrets(encrypted, config)
    kubeconfig = config.cluster.kubeconfig
    if kubeconfig is not None and "cluster" not in encrypted:
        places = kubeconfig_credentials(kubeconfig.get_secret_value())
        if places:
            problems.append(kubeconfig_problem(places))
    spec, found = resolve(config, stack, tenant_file_models)
    spec = dataclasses.replace(spec, tenant_files=dict(tenant_files), tenant_file_text=dict(written))
    problems += found
    placements, found = plan_placements(spec.models.values(), spec.topology, spec.gpu_resource)
    spec = dataclasses.replace(spec, placements=placements)
    problems += found
    problems += run_checks(spec)
    problems += check_tenant_files(spec, tenant_files, written)
    problems = relocate_inherited(problems, raw.get("models"), raw.get("modelDefaults"))
    errors = errors_of(problems)
    if errors:
        raise ConfigError(errors)
    return dataclasses.replace(spec, warnings=tuple(warnings_of(problems)))


def _misplaced_secrets(encrypted: Collection[str], config: StackConfig) -> list[Problem]:
    """Under the engine only top-level keys are marked secret (`PULUMI_CONFIG_SECRET_KEYS`), so an
    encrypted value is placed by its key: `secrets` and the kubeconfig in `cluster` take one. (The
    offline reader sees the file and names the exact key.)"""
    problems: list[Problem] = []
    for key in sorted(encrypted):
        if key == "secrets" or (key == "cluster" and config.cluster.kubeconfig is not None):
            continue
        problems.append(
            Problem(
                key,
                f"`{key}` holds an encrypted value, but no key of it takes one: the decrypted text would be used "
                "as plain text (in pod arguments, labels or summaries) without a mask",
                "store the value under `secrets` and refer to it where a key takes a secret (`env: {NAME: {secret: "
                "<name>}}`, `passwordSecret`, `tokenSecret`); only `secrets.*` and `cluster.kubeconfig` are encrypted",
            )
        )
    return problems


def _config_keys() -> set[str]:
    """Every config key the engine passed (`<namespace>:<key>`)."""
    from pulumi.runtime import config as runtime_config

    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def load_from_pulumi() -> PlatformSpec:
    """Read every `volcano-platform:<key>` from the running Pulumi program and load it."""
    import pulumi
    from pulumi.runtime import get_config, is_config_secret

    keys = _config_keys()
    own = {key.split(":", 1)[1] for key in keys if key.startswith(f"{PROJECT}:")}
    raw: dict[str, Any] = {}
    for key in sorted(own | set(TOP_LEVEL_KEYS)):
        value = get_config(f"{PROJECT}:{key}")
        if value is None:
            continue
        try:
            raw[key] = json.loads(value)
        except (TypeError, ValueError):
            raw[key] = value
    plaintext: list[str] = []
    if isinstance(raw.get("secrets"), Mapping) and not is_config_secret(f"{PROJECT}:secrets"):
        plaintext = list(raw["secrets"])
    other = [key for key in keys if not key.startswith(f"{PROJECT}:")]
    encrypted = [key for key in raw if is_config_secret(f"{PROJECT}:{key}")]
    handed_over = {key: str(get_config(key) or "") for key in keys}
    size = handover_problems(handed_over)
    if errors_of(size):
        raise ConfigError(size)
    spec = load_raw(raw, pulumi.get_stack(), plaintext, other, encrypted)
    return dataclasses.replace(spec, warnings=(*size, *spec.warnings))
