"""The project's name: the namespace of its stack-config keys (`volcano-platform:<key>`)."""

from __future__ import annotations

PROJECT = "volcano-platform"
