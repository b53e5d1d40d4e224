"""`python -m offline <command>`: the deprecated spelling of `volcano-platform <command>`, kept for
this release because pull-request workflows and users' scripts call it."""

from cli import run_deprecated

if __name__ == "__main__":
    run_deprecated("python -m offline")
