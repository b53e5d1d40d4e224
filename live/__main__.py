"""`python -m live <command>`: the deprecated spelling of `volcano-platform <command>`."""

from cli import run_deprecated

if __name__ == "__main__":
    run_deprecated("python -m live")
