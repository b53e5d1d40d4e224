"""The keys that keep tenants apart: grants for tenant files and NetworkPolicies."""
