#!/usr/bin/env bash
# Builds etcd (its server module's main) into the folder named by $1.
set -euo pipefail
cd "$(dirname "$0")"
go build -trimpath -ldflags=-s -o "$1/etcd" go.etcd.io/etcd/server/v3
