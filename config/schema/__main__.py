"""`python -m config.schema` (or `make schema`): write the stack-file JSON Schema and the
configuration reference from the config models, with their attributes' docstrings as descriptions
(`SCHEMA_DOCS_VARIABLE`; the process starts again with it set when it is not)."""

import os
import sys

from config.schema.base import SCHEMA_DOCS_VARIABLE

if __name__ == "__main__":
    if os.environ.get(SCHEMA_DOCS_VARIABLE) != "1":  # the models are built without their docstrings
        os.execve(sys.executable, [sys.executable, "-m", "config.schema"], {**os.environ, SCHEMA_DOCS_VARIABLE: "1"})
    from config.schema.export import main

    sys.exit(main())
