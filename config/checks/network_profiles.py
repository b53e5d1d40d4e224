"""Pool network profiles (`pools.<p>.network`) against the models that would carry them: one
profile per model, a whole node per pod where the interconnect needs it, no volume of the model
named as a profile's, and a profile on the hardware it is written for."""

from __future__ import annotations

from config.errors import Problem, join_path
from config.spec.platform import PlatformSpec
from config.upstream.accelerators import GKE_A3_MEGA_ACCELERATOR
from config.upstream.interconnects import NETWORK_PROFILES, TCPXO


def check_network_profiles(spec: PlatformSpec) -> list[Problem]:
    problems = _pool_hardware(spec)
    for model in spec.models.values():
        for view in (model, *model.role_views):
            path = view.key_path
            if view.multi_node and view.pools:
                problems += _one_profile(spec, model.name, view.pools)
            if view.network is None:
                continue
            profile = NETWORK_PROFILES[view.network.profile]
            pool_gpus = {spec.pools[p].gpus_per_node for p in view.pools or () if p in spec.pools}
            gpus = view.config.resources.gpus
            if profile.whole_node and pool_gpus and pool_gpus != {gpus}:
                problems.append(
                    Problem(
                        join_path(path, "resources", "gpus"),
                        f"its pools' `{profile.name}` network needs every GPU and every GPU NIC of a node in one pod "
                        f"(the daemon serves the node's {', '.join(map(str, sorted(pool_gpus)))} GPUs), and a pod "
                        f"requests {gpus}",
                        f"request `gpus: {max(pool_gpus)}` per pod (one pod per node), or run the model on a pool "
                        "without the profile",
                        got=gpus,
                    )
                )
            taken = {m.volume for m in profile.host_mounts}
            for name in view.config.volumes:
                if name in taken:
                    problems.append(
                        Problem(
                            join_path(path, "volumes", name),
                            f"the `{profile.name}` network profile of its pools mounts a volume of this name",
                            f"rename the volume (the profile's: {', '.join(sorted(taken))})",
                            got=name,
                        )
                    )
    return problems


def _one_profile(spec: PlatformSpec, model: str, pools: tuple[str, ...]) -> list[Problem]:
    """A model's pods share one template, so the pools it may span carry one network profile."""
    profiles = {p: spec.pools[p].config.network for p in pools if p in spec.pools}
    if len({n.profile if n else None for n in profiles.values()}) <= 1 and len(set(profiles.values())) <= 1:
        return []
    described = ", ".join(f"`{p}` ({n.profile if n else 'none'})" for p, n in profiles.items())
    return [
        Problem(
            join_path("models", model, "pools"),
            f"the model's pods share one template, and its pools carry different network profiles: {described}",
            "run the model on pools of one network profile (the same `pools.<p>.network`)",
            got=list(pools),
        )
    ]


def _pool_hardware(spec: PlatformSpec) -> list[Problem]:
    problems: list[Problem] = []
    for name, pool in spec.pools.items():
        network = pool.config.network
        product = pool.product
        if network is None or network.profile != TCPXO.name or product is None:
            continue
        if product != GKE_A3_MEGA_ACCELERATOR:
            problems.append(
                Problem(
                    join_path("pools", name, "network", "profile"),
                    f"{TCPXO.title} runs on GKE's A3 Mega (`{GKE_A3_MEGA_ACCELERATOR}`); the pool's accelerator is "
                    f"`{product}`",
                    "remove the profile, or give the pool's product as GKE labels it "
                    "(`cloud.google.com/gke-accelerator`)",
                    got=network.profile,
                    severity="warning",
                )
            )
    return problems
