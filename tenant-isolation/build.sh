#!/usr/bin/env bash
# Builds tenant-isolation into the file named by $1 (default ./tenant-isolation). Pure Go (no
# cgo): a static program, no C toolchain needed. The modules come from the Go module proxy, pinned
# by go.sum.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/tenant-isolation}
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
cd "$here"
export CGO_ENABLED=0
go build -trimpath -ldflags=-s -o "$out" .
