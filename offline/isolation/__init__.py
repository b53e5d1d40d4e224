"""Tenant isolation proven with the upstream engines: the flows a render promises, and the
program that answers them."""
