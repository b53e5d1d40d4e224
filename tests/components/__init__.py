"""Tests of `components/`."""
