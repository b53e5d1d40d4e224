"""`python -m config.schema` (or `make schema`): write the stack-file JSON Schema and the
configuration reference from the config models, with their attributes' docstrings as descriptions
(`config.schema.export.main` starts the process again with `SCHEMA_DOCS_VARIABLE` set when it is
not)."""

import sys

from config.schema.export import main

if __name__ == "__main__":
    sys.exit(main())
