"""Registering Kubernetes objects: the provider, `KubernetesResource` (registrations without the
generated classes), helpers shared by every component (custom kinds, Helm releases, adoption,
option merging) and the YAML text Helm values and renders use."""
