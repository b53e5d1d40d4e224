"""`tenantPolicy` held to the stack it grants in: every name a grant gives is one the stack has.

A grant that names a class, secret, pool, tenant or accelerator type the stack does not have
grants nothing, and the tenant team finds out only when its file is refused; a misspelt tenant
under `tenantPolicy.tenants` leaves the real tenant on the defaults. So each name is checked where
it is written, with the name it most likely meant. Resource names in the ceilings are checked with
every other quota's (`config.checks.names`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

from config.errors import Problem, join_path
from config.sections.isolation.tenant_policy import TenantGrant
from config.spec.platform import PlatformSpec


def check_tenant_policy(spec: PlatformSpec) -> list[Problem]:
    policy = spec.config.tenant_policy
    tenants = sorted(spec.config.tenants)
    problems = [
        _unknown(join_path("tenantPolicy", "tenants", name), name, tenants, "a tenant of the stack")
        for name in policy.tenants
        if name not in spec.config.tenants
    ]
    grants = [(join_path("tenantPolicy", "default"), policy.default)]
    grants += [(join_path("tenantPolicy", "tenants", name), grant) for name, grant in policy.tenants.items()]
    for path, grant in grants:
        problems += list(_names(spec, path, grant))
    return problems


def _names(spec: PlatformSpec, path: str, grant: TenantGrant) -> Iterator[Problem]:
    config = spec.config
    known: list[tuple[str, Iterable[str] | None, Iterable[str], str]] = [
        ("priorityClasses", grant.priority_classes, spec.priority_classes, "a priority class of the stack"),
        ("secrets", grant.secrets, config.secrets, "an entry of `secrets`"),
        ("registries", grant.registries, config.registries, "an entry of `registries`"),
        ("consumers", grant.consumers, config.tenants, "a tenant of the stack"),
        ("parents", grant.parents, config.tenants, "a tenant of the stack"),
        ("pools", grant.pools, spec.pools, "a pool of the stack"),
    ]
    known.append(("byType", grant.by_type, set(spec.pool_types.values()), "an accelerator type of the pools"))
    for field, written, names, what in known:
        allowed = sorted(names)
        for index, name in enumerate(written or ()):
            if name not in allowed:
                where = join_path(path, field, name) if field == "byType" else join_path(path, field, index)
                yield _unknown(where, name, allowed, what)


def _unknown(path: str, name: str, allowed: list[str], what: str) -> Problem:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)
    hint = f"did you mean `{close[0]}`? " if close else ""
    return Problem(
        path,
        f"`{name}` is not {what}, so the grant grants nothing",
        f"{hint}name one of: {', '.join(allowed) or 'none'}",
        got=name,
    )
