"""The scale benchmark (`python bench/scale.py`): a script, not a timed test; `bench/results.md` keeps its figures."""
