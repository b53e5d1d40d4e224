"""Kubernetes naming rules as annotated string types for the config models.

Names in the stack file become object names, label keys and values, resource names and env vars;
checking them here means a bad name is reported against its key path before anything is applied,
instead of as an API-server rejection half-way through `pulumi up`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator

from config.base import invalid
from config.upstream import LWS_NAME_MAX

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def dns_label_problem(value: str, limit: int = 63) -> str | None:
    if len(value) > limit:
        return f"is {len(value)} characters long, at most {limit} are allowed"
    if not _DNS_LABEL.match(value):
        return "must be lower-case letters, digits and '-', starting and ending with a letter or digit"
    return None


def dns_1035_problem(value: str, limit: int = 63) -> str | None:
    if len(value) > limit:
        return f"is {len(value)} characters long, at most {limit} are allowed"
    if not _DNS_1035.match(value):
        return "must be lower-case letters, digits and '-', starting with a letter"
    return None


def dns_subdomain_problem(value: str) -> str | None:
    if len(value) > 253:
        return f"is {len(value)} characters long, at most 253 are allowed"
    if not _DNS_SUBDOMAIN.match(value):
        return "must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
    return None


def qualified_name_problem(value: str) -> str | None:
    """Label keys and extended resource names: optional DNS-subdomain prefix, then a name."""
    prefix, _, name = value.rpartition("/")
    if "/" in value and not prefix:
        return "has an empty prefix before '/'"
    if prefix and (problem := dns_subdomain_problem(prefix)):
        return f"prefix `{prefix}` {problem}"
    if len(name) > 63:
        return f"name part is {len(name)} characters long, at most 63 are allowed"
    if not _QUALIFIED_NAME.match(name):
        return "name part must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63:
        return f"is {len(value)} characters long, at most 63 are allowed"
    if not _LABEL_VALUE.match(value):
        return "must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def env_name_problem(value: str) -> str | None:
    if not _ENV_NAME.match(value):
        return "must be letters, digits, '_', '-' and '.', not starting with a digit"
    return None


def _checked(check: Callable[[str], str | None], what: str, fix: str) -> Callable[[str], str]:
    def validate(value: str) -> str:
        problem = check(value)
        if problem:
            raise invalid(f"{what} `{value}` {problem}", fix)
        return value

    return validate


DnsLabel = Annotated[
    str,
    AfterValidator(_checked(dns_label_problem, "name", "use a DNS-1123 label such as `team-a`")),
]
DnsSubdomain = Annotated[
    str,
    AfterValidator(_checked(dns_subdomain_problem, "name", "use a DNS-1123 subdomain such as `leafpair12`")),
]
LabelKey = Annotated[
    str,
    AfterValidator(
        _checked(qualified_name_problem, "label key", "use `prefix/name`, e.g. `topology.example.com/leaf`")
    ),
]
LabelValue = Annotated[
    str,
    AfterValidator(_checked(label_value_problem, "label value", "use at most 63 letters, digits, '-', '_' or '.'")),
]
ResourceName = Annotated[
    str,
    AfterValidator(_checked(qualified_name_problem, "resource name", "use a name such as `cpu` or `nvidia.com/gpu`")),
]
EnvName = Annotated[
    str,
    AfterValidator(_checked(env_name_problem, "variable name", "use a name such as `NCCL_SOCKET_IFNAME`")),
]


def _priority_class_problem(value: str) -> str | None:
    if value.startswith("system-"):
        return "uses the `system-` prefix Kubernetes reserves"
    return dns_subdomain_problem(value)


# Names of entries the stack file keys by name; each becomes a Kubernetes object name.
TenantName = Annotated[
    str,
    AfterValidator(
        _checked(
            dns_label_problem,
            "tenant name",
            "tenant names become namespace and queue names: use a DNS label such as `team-a`",
        )
    ),
]
ModelName = Annotated[
    str,
    AfterValidator(
        _checked(
            lambda value: dns_1035_problem(value, LWS_NAME_MAX),
            "model name",
            "model names become Deployment, LeaderWorkerSet and Service names: use a DNS-1035 label of "
            f"at most {LWS_NAME_MAX} characters, e.g. `qwen3-8b`",
        )
    ),
]
PriorityClassName = Annotated[
    str,
    AfterValidator(
        _checked(_priority_class_problem, "priority class name", "use a DNS subdomain such as `p0-critical`")
    ),
]
SecretName = Annotated[
    str,
    AfterValidator(
        _checked(dns_subdomain_problem, "name", "these names become Kubernetes Secret names: use a DNS subdomain")
    ),
]
