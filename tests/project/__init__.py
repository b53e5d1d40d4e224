"""Tests of `project/`."""
