"""The scheduling plane: the Volcano install and its generated values, tenant namespaces and queues,
priority classes, the network topology (node labels, HyperNodes) and the LeaderWorkerSet
controller."""
