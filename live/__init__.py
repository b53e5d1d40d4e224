"""Read-only views of a live cluster: the preflight that compares a stack with what a cluster
already has, and the import of a topology from the labels its nodes carry."""
