"""Tests of `config/`."""
