"""`python -m config.schema` (or `make schema`): write the stack-file JSON Schema and the
configuration reference from the config models."""

import sys

from config.schema.export import main

if __name__ == "__main__":
    sys.exit(main())
