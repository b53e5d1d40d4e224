"""Typed stack config: models, loading, cross-checks and errors.

Public surface: `load()` (inside a Pulumi program), `load_raw()` (anywhere), `PlatformSpec`,
`ConfigError`, `Problem`.
"""

from config.errors import ConfigError, Problem
from config.loader import load_from_pulumi as load
from config.loader import load_raw
from config.project import PROJECT
from config.spec.model import ModelSpec
from config.spec.platform import PlatformSpec, TenantSpec

__all__ = [
    "PROJECT",
    "ConfigError",
    "ModelSpec",
    "PlatformSpec",
    "Problem",
    "TenantSpec",
    "load",
    "load_raw",
]
