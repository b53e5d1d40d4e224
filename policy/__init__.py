"""CrossGuard policy pack of the platform; rules live in importable modules (see `pack.py`)."""
