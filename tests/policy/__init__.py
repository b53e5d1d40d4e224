"""Tests of `policy/`."""
