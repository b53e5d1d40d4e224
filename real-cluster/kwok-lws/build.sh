#!/usr/bin/env bash
# Builds KWOK's controller and the LeaderWorkerSet controller into the folder named by $1; one
# module, so the Kubernetes libraries both use are compiled once.
set -euo pipefail
cd "$(dirname "$0")"
go build -trimpath -ldflags=-s -o "$1/kwok" sigs.k8s.io/kwok/cmd/kwok
go build -trimpath -ldflags=-s -o "$1/lws-controller" sigs.k8s.io/lws/cmd
