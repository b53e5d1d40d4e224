"""Pulumi components (one per concept) and the pure builders they use."""
