"""Secrets and credentials: values that must be encrypted, references that must exist, and Secrets
that would collide."""

from __future__ import annotations

import re

from config.errors import Problem, join_path
from config.spec.platform import PlatformSpec
from config.spec.secrets import registries_needed, secrets_needed


def check_secret_names(spec: PlatformSpec) -> list[Problem]:
    registries = registries_needed(spec)
    problems: list[Problem] = []
    for namespace, names in sorted(secrets_needed(spec).items()):
        for name in sorted(names & registries.get(namespace, set())):
            problems.append(
                Problem(
                    join_path("registries", name),
                    f"`secrets.{name}` and `registries.{name}` would both become the Secret `{name}` in "
                    f"namespace `{namespace}`; one Secret can be managed by one resource only",
                    "rename the registry (and the models' `imagePullSecrets`) or the secret (and its references)",
                )
            )
    return problems


# Shapes of credentials that leak when written in plain text, whatever the variable is called.
TOKEN_SHAPES = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
    ("a GitHub token", re.compile(r"\b(ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("an AWS access key", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
# kubeconfig fields that carry credentials.
KUBECONFIG_CREDENTIALS = re.compile(r"^\s*(token|client-key-data|password|client-key)\s*:", re.M)


def credential_shape(value: str) -> str | None:
    """What kind of credential `value` looks like, if any."""
    for what, shape in TOKEN_SHAPES:
        if shape.search(value):
            return what
    return None


def secret_exists(spec: PlatformSpec, name: str, path: str) -> list[Problem]:
    if name in spec.config.secrets:
        return []
    return [
        Problem(
            path,
            f"secret `{name}` is not defined",
            f"set it with `pulumi config set --secret --path 'secrets.{name}' <value>`",
            got=name,
        )
    ]


def check_registries(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for name, registry in spec.config.registries.items():
        problems += secret_exists(spec, registry.password_secret, join_path("registries", name, "passwordSecret"))
    return problems
