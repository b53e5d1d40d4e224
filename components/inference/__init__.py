"""Per-model inference stacks. `single_node.py` and `multi_node.py` are the components (a Deployment;
a LeaderWorkerSet with its PodGroup); the other modules are the pure builders of their objects
(pod template, vLLM command line, Service, autoscaler)."""
