"""Kubernetes naming rules as annotated string types for the config models.

Names in the stack file become object names, label keys and values, resource names and env vars;
checking them here means a bad name is reported against its key path before anything is applied,
instead of as an API-server rejection half-way through `pulumi up`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlparse

from pydantic import AfterValidator

from config.schema.base import invalid
from config.upstream.lws import LWS_NAME_MAX

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*\Z")


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


def gateway_hostname_problem(value: str) -> str | None:
    """Gateway API's `Hostname` (v1.5.1 `apis/v1/shared_types.go`, the CRDs' pattern and maxLength):
    an RFC 1123 host name, each label at most 63 characters, that is no IP address, optionally
    behind one wildcard label (`*.team-a.example.com`)."""
    name = value.removeprefix("*.")
    if len(value) > 253:
        return f"is {len(value)} characters long, at most 253 are allowed"
    if "*" in name:
        return "has a wildcard that is not the whole first label; only `*.` may start a hostname"
    if not _DNS_SUBDOMAIN.match(name):
        return "must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
    if any(len(label) > 63 for label in name.split(".")):
        return "has a label longer than 63 characters"
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return None
    return "is an IP address; Gateway API routes by host name only"


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


# The distribution reference grammar (github.com/distribution/reference): registry host with an
# optional port, lower-case path components, then a tag and/or a digest.
_DOMAIN = (
    r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*"
)
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REGISTRY = re.compile(rf"^{_DOMAIN}(?::[0-9]+)?(?:/{_PATH_COMPONENT})*\Z")
_IMAGE = re.compile(
    rf"^(?:{_DOMAIN}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?\Z"
)
_CHART_REPOSITORY = re.compile(rf"^(?:oci://{_DOMAIN}(?::[0-9]+)?(?:/{_PATH_COMPONENT})*|https?://[^\s/]+(?:/\S*)?)\Z")


def image_reference_problem(value: str) -> str | None:
    if "://" in value:
        return "has a URL scheme; image references start with the registry host"
    if not _IMAGE.match(value):
        if value != value.lower() and _IMAGE.match(value.lower()):
            return "has upper-case letters in its repository path, which image references do not allow"
        return "is not an image reference (`[registry[:port]/]path[:tag][@digest]`)"
    return None


def registry_problem(value: str) -> str | None:
    if "://" in value:
        return "has a URL scheme; a registry is a host[:port][/path] such as `harbor.example.com:5000/mirror`"
    if not value:
        return "is empty"
    if not _REGISTRY.match(value):
        return "is not a registry host[:port][/path] (path components are lower case)"
    return None


def chart_repository_problem(value: str) -> str | None:
    if not _CHART_REPOSITORY.match(value):
        return "is neither an `oci://host[:port]/path` reference nor an `https://` Helm repository URL"
    return None


def env_name_problem(value: str) -> str | None:
    if not _ENV_NAME.match(value):
        return "must be letters, digits, '_', '-' and '.', not starting with a digit"
    return None


# Prometheus' label names (prometheus/common v0.67.5 `model/labels.go`, LabelNameRE: what Prometheus 2
# accepts, and 3 with its legacy names); `__` begins the names it reserves for itself.
_PROMETHEUS_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def prometheus_label_name_problem(value: str) -> str | None:
    if not _PROMETHEUS_LABEL_NAME.fullmatch(value):
        return "is not a Prometheus label name (letters, digits and '_', not starting with a digit)"
    if value.startswith("__"):
        return "begins with `__`, which Prometheus reserves for its own labels"
    return None


def prometheus_label_value_problem(value: str) -> str | None:
    """Any UTF-8 text is a label value to Prometheus (rulefmt checks `LabelValue.IsValid`); an empty
    one is the label's absence, and a value is kept to a line."""
    if not value:
        return "is empty, which Prometheus reads as no label at all"
    if len(value) > 1024 or not value.isprintable():
        return "is not one printable line of at most 1024 characters"
    if "{{" in value or "}}" in value:
        # Prometheus expands a rule's label values as templates (prometheus v0.310.0
        # `model/rulefmt/rulefmt.go`, testTemplateParsing), so a stray brace pair fails the rule file.
        return "holds `{{` or `}}`, which Prometheus reads as a template in a rule's labels"
    return None


def local_file_problem(value: str) -> str | None:
    """A file Helm reads on the machine that runs `pulumi up`: Helm opens the path as written
    (helm `internal/tlsutil`, ReadFile), so no URL and no `~`, which only a shell expands."""
    if "://" in value:
        return "is a URL; Helm reads a file here, on the machine that runs `pulumi up`"
    if value.startswith("~"):
        return "begins with `~`, which Helm does not expand (only a shell does)"
    if not value.strip() or not value.isprintable():
        return "is not a file path"
    return None


def http_url_problem(value: str) -> str | None:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return "is not an http(s) URL"
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
GatewayHostname = Annotated[
    str,
    AfterValidator(
        _checked(
            gateway_hostname_problem,
            "hostname",
            "use a host name such as `team-a.models.example.com`, or `*.team-a.models.example.com` for every "
            "name under it",
        )
    ),
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
PrometheusLabelName = Annotated[
    str,
    AfterValidator(_checked(prometheus_label_name_problem, "alert label", "use a name such as `team` or `route_to`")),
]
PrometheusLabelValue = Annotated[
    str,
    AfterValidator(
        _checked(
            prometheus_label_value_problem,
            "alert label value",
            "give the label a plain value of one line, or remove it",
        )
    ),
]
ResourceName = Annotated[
    str,
    AfterValidator(_checked(qualified_name_problem, "resource name", "use a name such as `cpu` or `nvidia.com/gpu`")),
]


def extended_resource_problem(value: str) -> str | None:
    """Extended resources are domain-qualified (`vendor.com/name`) outside `kubernetes.io`."""
    if "/" not in value:
        return "has no domain; device plugins advertise extended resources as `<domain>/<name>`"
    if value.split("/", 1)[0].endswith("kubernetes.io"):
        return "is in the `kubernetes.io` domain, which extended resources may not use"
    return qualified_name_problem(value)


ExtendedResourceName = Annotated[
    str,
    AfterValidator(
        _checked(
            extended_resource_problem,
            "resource name",
            "use the name the device plugin advertises, e.g. `nvidia.com/gpu` or `rdma/hca_shared_devices_a`",
        )
    ),
]
LocalFile = Annotated[
    str,
    AfterValidator(
        _checked(local_file_problem, "file", "write the file's path, absolute (`/etc/ssl/harbor-ca.pem`) or relative")
    ),
]
HttpUrl = Annotated[
    str,
    AfterValidator(_checked(http_url_problem, "URL", "write it as http(s)://host[:port][/path]")),
]
EnvName = Annotated[
    str,
    AfterValidator(_checked(env_name_problem, "variable name", "use a name such as `NCCL_SOCKET_IFNAME`")),
]


def _priority_class_problem(value: str) -> str | None:
    if value.startswith("system-"):
        return "uses the `system-` prefix Kubernetes reserves"
    return dns_subdomain_problem(value)


ImageReference = Annotated[
    str,
    AfterValidator(
        _checked(
            image_reference_problem, "image", "write `registry[:port]/path/name:tag`, e.g. `vllm/vllm-openai:v0.33.0`"
        )
    ),
]
RegistryHost = Annotated[
    str,
    AfterValidator(_checked(registry_problem, "registry", "write the host without a scheme, e.g. `10.8.17.100:60066`")),
]
ChartRepository = Annotated[
    str,
    AfterValidator(
        _checked(
            chart_repository_problem,
            "chart repository",
            "write `oci://harbor.example.com/charts` (OCI, e.g. Harbor 2.8+) or `https://charts.example.com` "
            "(a Helm repository)",
        )
    ),
]

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
