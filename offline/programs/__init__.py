"""Building the project's Go programs."""
