"""A local cluster of a stack's shape: etcd, the API server, KWOK GPU nodes, Volcano and LWS as
processes on 127.0.0.1, for `pulumi up` against it (`volcano-platform sandbox`) and for the tests."""
