"""The shape of each top-level section of a stack file (`cluster`, `volcano`, `lws`, `topology`,
`tenants`, `priorityClasses`, `models`, `observability`...) as pydantic models, one module per
section; `stack.py` holds the whole file. What a key means and its default live here, next to it."""
