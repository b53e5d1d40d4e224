"""The schema of stack files: the strict, frozen base every section's model derives from (and how
pydantic's errors become key-path problems), the value types sections share (Kubernetes names,
quantities) and what is generated from the sections (`python -m config.schema` writes the JSON
Schema and docs/configuration.md)."""
