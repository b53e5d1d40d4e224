"""Tests of `offline/`."""
