"""Secrets and credentials: values that must be encrypted, references that must exist, and Secrets
that would collide."""

from __future__ import annotations

from typing import Any

from config.credential_shapes import credential_shape
from config.errors import REDACTED, Problem, join_path
from config.spec.images import lws_chart, lws_image, reference_host, volcano_chart, volcano_image_registry
from config.spec.platform import PlatformSpec
from config.spec.secrets import registries_needed, secrets_needed
from config.stack_file.yaml12 import StackYamlError, read_yaml


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


# Docker Hub's names: an image without a registry host is pulled from it, and the kubelet matches a
# pull secret for any of them (pkg/credentialprovider: `docker.io` keys are normalised to the index).
DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})


def image_host_and_path(image: str) -> tuple[str, str]:
    """(host[:port], repository path) of an image, as distribution/reference splits it: the first
    component is the registry when it has a `.` or `:` or is `localhost`, else the image is on
    Docker Hub."""
    name = image.split("@", 1)[0]
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        host, path = first, rest
    else:
        host, path = "docker.io", name if "/" in name else f"library/{name}"
    last = path.rsplit("/", 1)
    if ":" in last[-1]:
        path = path.rsplit(":", 1)[0]
    return host.lower(), path


def server_matches(server: str, image: str) -> bool:
    """Whether the kubelet would use a pull secret for `server` to pull `image`: the same host and
    port (Docker Hub under any of its names), and the server's path, if any, a prefix of the image's
    (pkg/credentialprovider/keyring.go, `URLsMatch`)."""
    host, _, prefix = server.lower().partition("/")
    image_host, path = image_host_and_path(image)
    same = host == image_host or (host in DOCKER_HUB and image_host in DOCKER_HUB)
    return same and (not prefix or path == prefix or path.startswith(prefix.rstrip("/") + "/"))


def _port_problem(path: str, host: str) -> Problem | None:
    _, colon, port = host.split("/", 1)[0].rpartition(":")
    if "://" in host or not colon or (port.isdigit() and 1 <= int(port) <= 65535):
        return None
    return Problem(
        path,
        f"port {port} is outside 1-65535, so nothing can connect to the registry",
        "write the registry's real port, e.g. `harbor.example.com:5000`",
        got=host,
    )


def _registry_ports(spec: PlatformSpec) -> list[Problem]:
    config = spec.config
    hosts: list[tuple[str, str | None]] = [
        (join_path("registries", name, "server"), r.server) for name, r in config.registries.items()
    ]
    hosts += [
        ("cluster.mirror.registry", config.cluster.mirror.registry),
        ("volcano.imageRegistry", config.volcano.image_registry),
    ]
    if config.lws.image_repository and "/" in config.lws.image_repository:
        hosts.append(("lws.imageRepository", config.lws.image_repository))
    for model in spec.models.values():
        if "/" in model.config.image:
            hosts.append((join_path("models", model.name, "image"), model.config.image))
    return [p for path, host in hosts if host and (p := _port_problem(path, host)) is not None]


def _pull_secret_hosts(spec: PlatformSpec) -> list[Problem]:
    """A pull secret the kubelet would never use for the image it was given for: the image is then
    pulled without credentials, and fails on a private registry."""
    config = spec.config
    registries = config.registries
    mirror = config.cluster.mirror.registry
    problems: list[Problem] = []

    def unmatched(path: str, entry: str | None, images: list[str], also: str | None = None) -> None:
        registry = registries.get(entry) if entry else None
        if registry is None or any(server_matches(registry.server, image) for image in images):
            return
        if also is not None and server_matches(registry.server, f"{also}/x"):
            return
        hosts = ", ".join(sorted({image_host_and_path(image)[0] for image in images}))
        problems.append(
            Problem(
                path,
                f"`registries.{entry}` is for `{registry.server}`, but the image is pulled from {hosts}"
                + (f" and the mirror is `{also}`" if also else "")
                + ", so the kubelet never uses it and the pull goes without credentials",
                f"name the entry whose `server` is the image's registry, or set `registries.{entry}.server` to it",
                got=entry,
            )
        )

    for model in spec.models.values():
        for index, entry in enumerate(model.config.image_pull_secrets):
            unmatched(join_path("models", model.name, "imagePullSecrets", index), entry, [model.config.image], mirror)
    volcano = volcano_image_registry(config)
    unmatched("volcano.imagePullSecret", config.volcano.image_pull_secret, [f"{volcano}/volcanosh/vc-scheduler"])
    if spec.lws_install:
        unmatched("lws.imagePullSecret", config.lws.image_pull_secret, [lws_image(config)])
    if mirror:
        unmatched("cluster.mirror.pullSecret", config.cluster.mirror.pull_secret, [f"{mirror}/x"])
    return problems


def _chart_login_hosts(spec: PlatformSpec) -> list[Problem]:
    """Chart credentials go only to the host they were issued for: a registry robot's login sent to
    the public chart repository would hand it to a third party."""
    config = spec.config
    problems: list[Problem] = []
    charts = []
    if config.volcano.install:
        charts.append(("volcano", volcano_chart(config), config.volcano.chart_credentials, "volcano.repository"))
    if spec.lws_install:
        charts.append(("lws", lws_chart(config), config.lws.chart_credentials, "lws.chart"))
    for install, source, own, where in charts:
        entry = config.registries.get(source.credentials or "")
        if entry is None:
            continue
        host = reference_host(source.repository or source.chart)
        if entry.server != host:
            key = f"{install}.chartCredentials" if own else "cluster.mirror.chartCredentials"
            problems.append(
                Problem(
                    key,
                    f"the {install} chart comes from `{host}`, but the credentials of `{source.credentials}` are for "
                    f"`{entry.server}`: they would be sent to a host they were not issued for",
                    f"pull the chart from `{entry.server}` (`{where}`), or remove the credentials",
                    got=source.credentials,
                )
            )
    return problems


def check_registries(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = [*_registry_ports(spec), *_pull_secret_hosts(spec), *_chart_login_hosts(spec)]
    for name, registry in spec.config.registries.items():
        problems += secret_exists(spec, registry.password_secret, join_path("registries", name, "passwordSecret"))
    config = spec.config
    for path, entry in (
        ("cluster.mirror.chartCredentials", config.cluster.mirror.chart_credentials),
        ("volcano.chartCredentials", config.volcano.chart_credentials),
        ("lws.chartCredentials", config.lws.chart_credentials),
    ):
        if entry is not None and entry not in config.registries:
            problems.append(
                Problem(
                    path,
                    f"`{entry}` is not an entry of `registries`, so the chart would be pulled without credentials",
                    "add it under `registries` (server, username, passwordSecret), or use one of: "
                    + (", ".join(config.registries) or "(none defined)"),
                    got=entry,
                )
            )
    return problems


# Fields of a kubeconfig user that hold a credential (client-go `clientcmd/api/v1` `AuthInfo`), and
# the auth-provider settings that do (OIDC `client-secret`, `id-token`, `refresh-token`; the GCP
# and Azure providers' `access-token`). Every `exec.env` value counts: exec plugins take their
# secrets from there.
_USER_CREDENTIALS = ("token", "password", "client-key-data")
_AUTH_PROVIDER_CREDENTIALS = ("client-secret", "id-token", "refresh-token", "access-token", "secret")


def kubeconfig_credentials(text: str) -> list[str]:
    """Where a kubeconfig given as its contents (YAML or JSON) holds credentials, as key paths
    inside it. Text that is not a kubeconfig mapping (a file path) holds none."""
    try:
        data = read_yaml(text.encode())
    except StackYamlError:
        return ["(the kubeconfig cannot be read as YAML; it may hold anything)"] if "\n" in text else []
    if not isinstance(data, dict):
        return []
    found: list[str] = []
    users = data.get("users")
    for index, entry in enumerate(users if isinstance(users, list) else []):
        user = entry.get("user") if isinstance(entry, dict) else None
        if not isinstance(user, dict):
            continue
        base = f"users[{index}].user"
        found += [f"{base}.{key}" for key in _USER_CREDENTIALS if user.get(key)]
        provider = user.get("auth-provider")
        settings = provider.get("config") if isinstance(provider, dict) else None
        if isinstance(settings, dict):
            found += [f"{base}.auth-provider.config.{k}" for k in _AUTH_PROVIDER_CREDENTIALS if settings.get(k)]
        exec_config = user.get("exec")
        env = exec_config.get("env") if isinstance(exec_config, dict) else None
        for position, item in enumerate(env if isinstance(env, list) else []):
            if isinstance(item, dict) and item.get("value"):
                found.append(f"{base}.exec.env[{position}]")
    return found


def kubeconfig_problem(places: list[str]) -> Problem:
    return Problem(
        "cluster.kubeconfig",
        f"the kubeconfig holds credentials in plain text ({', '.join(places)})",
        'store it encrypted: `pulumi config set --secret --path cluster.kubeconfig "$(cat kubeconfig)"`, '
        "or give the path of a kubeconfig file instead",
    )


# vLLM flags whose value is a credential, with where the platform takes it from instead.
SECRET_FLAGS = {
    "--api-key": "write `env: {VLLM_API_KEY: {secret: <name>}}` (vLLM reads the key from it) with the key "
    "stored under `secrets`",
    "--hf-token": "set `source.hub.tokenSecret` to a secret holding the token",
}
# Sections no free-form credential can sit in unnoticed: `secrets` holds them (encrypted), the
# kubeconfig and model env values have their own checks, topology holds node names only.
_NOT_SCANNED = frozenset({"secrets", "topology", "models", "model_defaults"})
_MODEL_NOT_SCANNED = frozenset({"env"})


def check_plain_credentials(spec: PlatformSpec) -> list[Problem]:
    """A credential written in plain text anywhere the stack renders text into objects (labels,
    annotations, engine arguments, URLs, chart values) lands unmasked in the cluster, the state and
    the preview."""
    config = spec.config
    problems: list[Problem] = []
    sections = config.model_dump(by_alias=True, exclude=set(_NOT_SCANNED))
    sections.get("cluster", {}).pop("kubeconfig", None)
    problems += _scan(sections, ())
    for name, model in spec.models.items():
        problems += _secret_flags(model.config.engine.extra_args, ("models", name, "engine", "extraArgs"))
        dumped = model.config.model_dump(by_alias=True, exclude=set(_MODEL_NOT_SCANNED))
        problems += [
            p for p in _scan(dumped, ("models", name)) if not p.path.startswith(f"models.{name}.engine.extraArgs[")
        ] + _args_scan(model.config.engine.extra_args, ("models", name, "engine", "extraArgs"))
    return problems


def _secret_flags(args: tuple[str, ...], path: tuple[object, ...]) -> list[Problem]:
    problems: list[Problem] = []
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=")
        if flag not in SECRET_FLAGS:
            continue
        following = args[index + 1] if index + 1 < len(args) else ""
        literal = value if equals else ("" if following.startswith("-") else following)
        if literal:
            problems.append(
                Problem(
                    join_path(*path, index),
                    f"`{flag}` is given its credential in plain text, which lands in the pod's arguments, the "
                    "state and the preview",
                    SECRET_FLAGS[flag],
                    got=REDACTED,
                )
            )
    return problems


def _args_scan(args: tuple[str, ...], path: tuple[object, ...]) -> list[Problem]:
    """Credential shapes in arguments that are not a secret flag's value (reported above)."""
    skip = {i + 1 for i, arg in enumerate(args) if arg in SECRET_FLAGS} | {
        i for i, arg in enumerate(args) if arg.partition("=")[0] in SECRET_FLAGS
    }
    return [p for index, arg in enumerate(args) if index not in skip for p in _scan(arg, (*path, index))]


def _scan(value: Any, path: tuple[object, ...]) -> list[Problem]:
    if isinstance(value, str):
        shape = credential_shape(value)
        if shape is None:
            return []
        return [
            Problem(
                join_path(*path),
                f"the value looks like {shape} written in plain text; it would land unmasked in the objects, the "
                "state and the preview",
                "store it under `secrets` (`pulumi config set --secret --path 'secrets.<name>' <value>`) and refer "
                "to it where the key takes a secret (`env`, `passwordSecret`, `tokenSecret`)",
                got=REDACTED,
            )
        ]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _scan(item, (*path, key))]
    if isinstance(value, (list, tuple)):
        return [p for index, item in enumerate(value) for p in _scan(item, (*path, index))]
    return []
