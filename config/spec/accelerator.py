"""The cluster's accelerator as the stack resolves it: the vendor, its Ray resource and what the devices are called."""

from __future__ import annotations

from dataclasses import dataclass

from config.upstream.accelerators import VENDORS, Vendor, plural, vendor_of


@dataclass(frozen=True)
class Accelerator:
    """The cluster's accelerator as the stack resolves it."""

    vendor: Vendor
    resource: str
    ray_resource: str
    word: str

    @property
    def words(self) -> str:
        return plural(self.word)


def resolve_accelerator(resource: str, vendor: str | None, ray_resource: str | None, word: str | None) -> Accelerator:
    chosen = VENDORS[vendor] if vendor else vendor_of(resource)
    return Accelerator(chosen, resource, ray_resource or chosen.ray_resource, word or chosen.word)
