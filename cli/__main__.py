"""`python -m cli <command>`: the same tool as `volcano-platform <command>`, without installing it."""

from cli import run

if __name__ == "__main__":
    run()
