"""Tests of `live/`."""
