"""The order `make real-cluster` builds the cluster's programs in."""

from __future__ import annotations

from sandbox.programs import LONGEST_FIRST, SERVING, modules


def test_the_build_order_names_every_module_once() -> None:
    """`main` sorts the modules by `LONGEST_FIRST`: a module missing from it would stop the build."""
    assert sorted(LONGEST_FIRST) == sorted(m.folder for m in modules())
    assert LONGEST_FIRST[-len(SERVING) :] == SERVING  # the ones only some tests wait for, last
