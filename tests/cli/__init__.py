"""Tests of `cli/`."""
