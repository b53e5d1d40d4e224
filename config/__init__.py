"""Typed stack config: models, loading, cross-checks and errors.

Public surface: `load()` (inside a Pulumi program), `load_raw()` (anywhere), `PlatformSpec`,
`ConfigError`, `Problem`.
"""

from config.errors import ConfigError, Problem
from config.loader import PROJECT, load_raw
from config.loader import load_from_pulumi as load
from config.spec import ModelSpec, PlatformSpec, TenantSpec

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
