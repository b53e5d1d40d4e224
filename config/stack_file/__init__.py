"""Reading stack files the way the Pulumi CLI reads them: its YAML 1.2 scalar rules and limits
(`yaml12.py`), the project's defaults, namespaces and encrypted values (`reader.py`)."""
