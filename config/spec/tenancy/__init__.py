"""What each tenant is granted, settled from `tenantPolicy`."""
