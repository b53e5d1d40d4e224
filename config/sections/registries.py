"""`registries`: credentials for private registries, each a `kubernetes.io/dockerconfigjson` Secret."""

from __future__ import annotations

from pydantic import field_validator

from config.schema.base import ConfigModel, invalid
from config.schema.names import RegistryHost


class RegistryCredential(ConfigModel):
    """Credentials for a private registry; becomes a `kubernetes.io/dockerconfigjson` Secret."""

    server: RegistryHost
    """Registry host, e.g. `10.8.17.100:60066` (no scheme); a port is 1-65535. The kubelet uses
    the entry for images whose host (and path) it matches, so a model's `imagePullSecrets` and the
    installs' pull secrets must name an entry whose server is their image's registry."""
    username: str
    """User name (or token name) to log in with; not empty."""
    password_secret: str
    """Entry of `secrets` holding the password or token."""

    @field_validator("username")
    @classmethod
    def _username(cls, value: str) -> str:
        if not value.strip():
            raise invalid(
                "the user name is empty, so the registry refuses the login and every pull fails",
                "write the registry user (a Harbor robot account such as `robot$project`)",
            )
        return value
