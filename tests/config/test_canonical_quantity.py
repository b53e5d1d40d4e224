"""Quantities the stack writes into objects a controller rewrites are spelled as Kubernetes' own
clients spell them (apimachinery pkg/api/resource/quantity.go `CanonicalizeBytes`; its
quantity_test.go has the same pairs), so a controller's update never takes the field over. The
real case: Volcano's scheduler rewrote a slice PodGroup's `minResources.cpu: '96.1'` as `96100m`,
and every later apply failed with a conflict (tests/e2e/test_serving_objects.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from config.schema.quantity import canonical_quantity, quantity_value


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("16", "16"),
        ("96.1", "96100m"),
        ("1.5", "1500m"),
        ("0.5", "500m"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("2000000", "2M"),
        ("2048Mi", "2Gi"),
        ("1228928Mi", "1228928Mi"),
        ("0.0000001", "100n"),
    ],
)
def test_a_quantity_is_written_as_kubernetes_writes_it(written: str, canonical: str) -> None:
    assert canonical_quantity(quantity_value(written)) == canonical
    assert quantity_value(canonical) == quantity_value(written)


def test_zero_is_zero() -> None:
    assert canonical_quantity(Decimal(0)) == "0"
