"""Facts about upstream projects, each with the source it was read from: Volcano (names, actions,
plugins, flags, feature floors, metrics), LeaderWorkerSet, Kubernetes and pulumi-kubernetes
annotations, vLLM (flags, tool-call parsers, metrics per release), accelerator vendors, and the
upstream schemas vendored in `upstream/`. Changing upstream means changing a table here."""
